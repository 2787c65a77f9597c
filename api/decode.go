package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"

	"github.com/cairn-rmm/cairn"
)

// maxBody bounds every JSON request body.
const maxBody = 1 << 20

type bodyLimitKey struct{}

// withBodyLimit raises the body limit of one route (agent details posts
// carry whole inventories).
func withBodyLimit(n int64, h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		h(w, r.WithContext(context.WithValue(r.Context(), bodyLimitKey{}, n)))
	}
}

// decodeJSON reads one JSON object into dst, strictly: a body that is not
// JSON, too large, has unknown fields, wrong types or trailing data is
// refused before any domain work. An empty body decodes as {} when
// allowEmpty, else it is an error.
func decodeJSON(w http.ResponseWriter, r *http.Request, dst any, allowEmpty bool) error {
	if ct := r.Header.Get("Content-Type"); ct != "" {
		mt, _, err := mime.ParseMediaType(ct)
		if err != nil || mt != "application/json" {
			return cairn.Errorf(cairn.ECodeUnsupportedMedia, "send the body as application/json")
		}
	}
	limit := int64(maxBody)
	if n, ok := r.Context().Value(bodyLimitKey{}).(int64); ok {
		limit = n
	}
	body := http.MaxBytesReader(w, r.Body, limit)
	dec := json.NewDecoder(body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		return decodeError(err, allowEmpty)
	}
	if err := dec.Decode(&struct{}{}); !errors.Is(err, io.EOF) {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return tooLarge()
		}
		return cairn.Invalid("body", "must contain a single JSON object")
	}
	return nil
}

func decodeError(err error, allowEmpty bool) error {
	var (
		syntax *json.SyntaxError
		typ    *json.UnmarshalTypeError
		mbe    *http.MaxBytesError
	)
	switch {
	case errors.Is(err, io.EOF):
		if allowEmpty {
			return nil
		}
		return cairn.Invalid("body", "a JSON object is required")
	case errors.As(err, &mbe):
		return tooLarge()
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

func tooLarge() error {
	return cairn.Errorf(cairn.ECodeTooLarge, "the body is larger than %d bytes", maxBody)
}

// queryInt reads an optional integer query parameter within [lo, hi].
func queryInt(r *http.Request, name string, def, lo, hi int) (int, error) {
	raw := r.URL.Query().Get(name)
	if raw == "" {
		return def, nil
	}
	n, err := strconv.Atoi(raw)
	if err != nil || n < lo || n > hi {
		return 0, cairn.Invalid(name, fmt.Sprintf("must be an integer from %d to %d", lo, hi))
	}
	return n, nil
}
