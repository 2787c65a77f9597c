package software

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/xml"
	"errors"
	"fmt"
	"image/png"
	"io"
	"regexp"
	"strings"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/db"
)

// Icon limits: an icon is small; anything bigger is not an icon.
const (
	MaxIconBytes     = 256 << 10
	MaxIconDimension = 1024
)

// Icon content types.
const (
	TypePNG = "image/png"
	TypeICO = "image/x-icon"
	TypeSVG = "image/svg+xml"
)

// Icon is one stored icon.
type Icon struct {
	Hash        string
	ContentType string
	Data        []byte
}

var iconHashRE = regexp.MustCompile(`^[0-9a-f]{64}$`)

// IconByHash returns a stored icon; a malformed or unknown hash is
// not_found.
func (s *Service) IconByHash(ctx context.Context, hash string) (Icon, error) {
	if !iconHashRE.MatchString(hash) {
		return Icon{}, cairn.Errorf(cairn.ECodeNotFound, "no such icon")
	}
	row, err := s.store.SoftwareIconGet(ctx, hash)
	if err != nil {
		return Icon{}, db.NotFound(err, "no such icon")
	}
	return Icon{Hash: row.Hash, ContentType: row.ContentType, Data: row.Data}, nil
}

// SniffIcon validates uploaded icon bytes and returns their content type:
// a PNG that decodes within MaxIconDimension, an ICO whose directory
// entries lie inside the file, or an SVG without scripts, event handlers,
// foreign objects or external references. field names the input in
// validation errors.
func SniffIcon(field string, data []byte) (string, error) {
	switch {
	case len(data) == 0:
		return "", cairn.Invalid(field, "is empty")
	case len(data) > MaxIconBytes:
		return "", cairn.Invalid(field, fmt.Sprintf("must be at most %d bytes", MaxIconBytes))
	case bytes.HasPrefix(data, []byte("\x89PNG\r\n\x1a\n")):
		cfg, err := png.DecodeConfig(bytes.NewReader(data))
		if err != nil {
			return "", cairn.Invalid(field, "is not a readable PNG image")
		}
		if cfg.Width < 1 || cfg.Height < 1 || cfg.Width > MaxIconDimension || cfg.Height > MaxIconDimension {
			return "", cairn.Invalid(field, fmt.Sprintf("must be at most %dx%d pixels", MaxIconDimension, MaxIconDimension))
		}
		return TypePNG, nil
	case bytes.HasPrefix(data, []byte{0, 0, 1, 0}):
		if err := checkICO(data); err != nil {
			return "", cairn.Invalid(field, err.Error())
		}
		return TypeICO, nil
	}
	if looksLikeSVG(data) {
		if err := checkSVG(data); err != nil {
			return "", cairn.Invalid(field, err.Error())
		}
		return TypeSVG, nil
	}
	return "", cairn.Invalid(field, "must be a PNG, ICO or SVG image")
}

// checkICO reads an ICO directory: 1..64 images, each inside the file.
func checkICO(data []byte) error {
	if len(data) < 6 {
		return errors.New("is a truncated ICO file")
	}
	n := int(binary.LittleEndian.Uint16(data[4:6]))
	if n < 1 || n > 64 {
		return errors.New("must be an ICO file with 1 to 64 images")
	}
	if len(data) < 6+16*n {
		return errors.New("is a truncated ICO file")
	}
	for i := range n {
		e := data[6+16*i : 6+16*(i+1)]
		size := int64(binary.LittleEndian.Uint32(e[8:12]))
		off := int64(binary.LittleEndian.Uint32(e[12:16]))
		if size == 0 || off < int64(6+16*n) || off+size > int64(len(data)) {
			return errors.New("is a malformed ICO file (an image lies outside the file)")
		}
	}
	return nil
}

func looksLikeSVG(data []byte) bool {
	head := strings.ToLower(string(data[:min(len(data), 1024)]))
	return strings.Contains(head, "<svg")
}

// checkSVG accepts plain vector drawings only. The icon route serves every
// icon with a sandboxing Content-Security-Policy as well; this refusal is
// the first line, so a stored SVG is inert even where the header is lost.
func checkSVG(data []byte) error {
	dec := xml.NewDecoder(bytes.NewReader(data))
	dec.Strict = true
	root := true
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return errors.New("is not well-formed SVG")
		}
		switch t := tok.(type) {
		case xml.StartElement:
			local := strings.ToLower(t.Name.Local)
			if root && local != "svg" {
				return errors.New("must have <svg> as its root element")
			}
			root = false
			switch local {
			case "script", "foreignobject", "iframe", "embed", "object", "handler", "listener":
				return fmt.Errorf("must not contain <%s>", t.Name.Local)
			}
			for _, a := range t.Attr {
				name := strings.ToLower(a.Name.Local)
				val := strings.ToLower(strings.TrimSpace(a.Value))
				if strings.HasPrefix(name, "on") {
					return fmt.Errorf("must not carry event handlers (%s)", a.Name.Local)
				}
				if (name == "href" || name == "src") && val != "" && !strings.HasPrefix(val, "#") {
					return errors.New("must not reference anything outside itself")
				}
				if strings.Contains(val, "javascript:") || strings.Contains(val, "url(http") || strings.Contains(val, "url(//") {
					return errors.New("must not reference anything outside itself")
				}
			}
		case xml.Directive:
			// DOCTYPEs can declare entities; a plain icon needs none.
			return errors.New("must not contain a DOCTYPE")
		case xml.ProcInst:
			if !strings.EqualFold(t.Target, "xml") {
				return errors.New("must not contain processing instructions")
			}
		case xml.CharData:
			if s := strings.ToLower(string(t)); strings.Contains(s, "@import") || strings.Contains(s, "url(http") || strings.Contains(s, "url(//") {
				return errors.New("must not reference anything outside itself")
			}
		}
	}
	if root {
		return errors.New("is not an SVG image")
	}
	return nil
}

// iconHash is the hex SHA-256 icons are stored and served under.
func iconHash(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}
