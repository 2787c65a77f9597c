// Package jsonbody decodes JSON request bodies strictly. It is the api
// package's decoder, on its own so that its fuzz target builds without the
// whole Engine (go test -fuzz instruments every package it links).
package jsonbody

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"strings"

	"github.com/cairn-rmm/cairn"
)

// Decode reads one JSON object into dst, strictly: a body that is not
// JSON, larger than limit, has unknown fields, wrong types, NUL characters
// or trailing data is refused before any domain work. An empty body
// decodes as {} when allowEmpty, else it is an error. Every refusal is a
// client error (validation_failed, unsupported_media_type, too_large).
func Decode(w http.ResponseWriter, r *http.Request, dst any, limit int64, allowEmpty bool) error {
	if ct := r.Header.Get("Content-Type"); ct != "" {
		mt, _, err := mime.ParseMediaType(ct)
		if err != nil || mt != "application/json" {
			return cairn.Errorf(cairn.ECodeUnsupportedMedia, "send the body as application/json")
		}
	}
	raw, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return tooLarge(limit)
		}
		return cairn.Invalid("body", "could not be read")
	}
	return DecodeBytes(raw, dst, allowEmpty)
}

// DecodeBytes is Decode for a body already read (an agent call's body on
// the realtime socket, bounded by the socket's message limit): the same
// refusals, the same errors.
func DecodeBytes(raw []byte, dst any, allowEmpty bool) error {
	// PostgreSQL stores no NUL in text or jsonb: refuse it here, as the
	// client's error, rather than fail the query later as the server's.
	if hasNUL(raw) {
		return cairn.Invalid("body", `must not contain NUL characters (\u0000)`)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		return decodeError(err, allowEmpty)
	}
	if err := dec.Decode(&struct{}{}); !errors.Is(err, io.EOF) {
		return cairn.Invalid("body", "must contain a single JSON object")
	}
	return nil
}

// hasNUL reports a \u0000 escape in a JSON text. Backslashes occur only
// inside strings in valid JSON, so the escapes can be read without
// tracking strings (invalid JSON is refused by the decoder anyway).
func hasNUL(raw []byte) bool {
	for i := 0; i < len(raw); i++ {
		switch raw[i] {
		case 0:
			return true
		case '\\':
			if i+5 < len(raw) && raw[i+1] == 'u' && string(raw[i+2:i+6]) == "0000" {
				return true
			}
			i++ // the escaped character, a backslash included
		}
	}
	return false
}

func decodeError(err error, allowEmpty bool) error {
	var (
		syntax *json.SyntaxError
		typ    *json.UnmarshalTypeError
	)
	switch {
	case errors.Is(err, io.EOF):
		if allowEmpty {
			return nil
		}
		return cairn.Invalid("body", "a JSON object is required")
	case errors.As(err, &syntax), errors.Is(err, io.ErrUnexpectedEOF):
		return cairn.Invalid("body", "is not valid JSON")
	case errors.As(err, &typ):
		field := typ.Field
		if field == "" {
			return cairn.Invalid("body", "must be a JSON object")
		}
		return cairn.Invalid(field, "must be "+jsonKind(typ.Type.Kind().String()))
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		name := strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`)
		return cairn.Invalid(name, "is not a known field")
	}
	return cairn.Invalid("body", "could not be read")
}

func jsonKind(goKind string) string {
	switch goKind {
	case "string":
		return "a string"
	case "bool":
		return "true or false"
	case "int", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32", "uint64":
		return "an integer"
	case "float32", "float64":
		return "a number"
	case "slice", "array":
		return "an array"
	case "map", "struct":
		return "an object"
	}
	return "of another type"
}

func tooLarge(limit int64) error {
	return cairn.Errorf(cairn.ECodeTooLarge, "the body is larger than %d bytes", limit)
}
