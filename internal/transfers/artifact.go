package transfers

import (
	"archive/zip"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/db"
)

// A download's artifact comes from the agent, which the Engine does not
// trust to name things: its X-Content-Name ends up in an operator's
// Content-Disposition and its zip entries in an operator's unzip tool.

// CleanContentName drops the characters that make a name display as
// something it is not: the bidirectional controls (U+202A..U+202E,
// U+2066..U+2069, U+200E, U+200F, U+061C) and every control character
// (C0, DEL, C1); surrounding spaces go too. The result is still checked
// by the caller (empty, separators, length).
func CleanContentName(name string) string {
	return strings.TrimSpace(strings.Map(func(r rune) rune {
		if bidiControl(r) || unicode.IsControl(r) {
			return -1
		}
		return r
	}, name))
}

func bidiControl(r rune) bool {
	return (r >= 0x202A && r <= 0x202E) || (r >= 0x2066 && r <= 0x2069) || r == 0x200E || r == 0x200F || r == 0x061C
}

// CheckZipName refuses a zip entry name an unzip tool could write
// outside the folder it extracts into or read as another path:
// absolute, a ".." component, a backslash, a drive letter, a NUL.
func CheckZipName(name string) error {
	switch {
	case name == "":
		return errors.New("an entry has no name")
	case strings.ContainsRune(name, 0):
		return fmt.Errorf("entry %q holds a NUL", name)
	case strings.HasPrefix(name, "/"):
		return fmt.Errorf("entry %q is absolute", name)
	case strings.ContainsRune(name, '\\'):
		return fmt.Errorf("entry %q holds a backslash", name)
	case len(name) >= 2 && name[1] == ':' && ((name[0] >= 'a' && name[0] <= 'z') || (name[0] >= 'A' && name[0] <= 'Z')):
		return fmt.Errorf("entry %q names a drive", name)
	}
	for _, el := range strings.Split(name, "/") {
		if el == ".." {
			return fmt.Errorf("entry %q climbs out with ..", name)
		}
	}
	return nil
}

// CheckZip reads a zip's central directory (only the end of r) and
// checks every entry's name with CheckZipName.
func CheckZip(r io.ReaderAt, size int64) error {
	zr, err := zip.NewReader(r, size)
	if err != nil && !errors.Is(err, zip.ErrInsecurePath) {
		return fmt.Errorf("the artifact is not a readable zip: %w", err)
	}
	for _, f := range zr.File {
		if err := CheckZipName(f.Name); err != nil {
			return err
		}
	}
	return nil
}

// IsZipArtifact reports whether a download's artifact is a zip the agent
// built: everything but one path sent as it is, under that path's own
// last component (docs/agent.md "File transfers": a single regular file
// goes as is; several paths or a directory as a zip).
func IsZipArtifact(paths []string, name string) bool {
	if len(paths) != 1 {
		return true
	}
	p := strings.TrimRight(paths[0], `/\`)
	base := p[strings.LastIndexAny(p, `/\`)+1:]
	return name != base
}

// chunkReader reads a stored item at any offset, a chunk row at a time
// (a zip's central directory is read from its end).
type chunkReader struct {
	ctx   context.Context
	store *db.Store
	id    cairn.TransferID
	item  int32
	seq   int32
	data  []byte
	ok    bool
	err   error // a store failure, told apart from a bad zip
}

func (c *chunkReader) ReadAt(p []byte, off int64) (int, error) {
	n := 0
	for n < len(p) {
		seq := int32((off + int64(n)) / ChunkSize)
		if !c.ok || c.seq != seq {
			data, err := c.store.FileTransferChunkGet(c.ctx, db.FileTransferChunkGetParams{TransferID: c.id, ItemID: c.item, Seq: seq})
			if db.IsNoRows(err) {
				return n, io.EOF
			}
			if err != nil {
				c.err = err
				return n, err
			}
			c.seq, c.data, c.ok = seq, data, true
		}
		at := int((off + int64(n)) % ChunkSize)
		if at >= len(c.data) {
			return n, io.EOF
		}
		n += copy(p[n:], c.data[at:])
	}
	return n, nil
}

// checkArtifact refuses a stored download artifact that is a zip with
// an entry name CheckZipName refuses, as validation_failed on field
// "content".
func (s *Service) checkArtifact(ctx context.Context, t db.FileTransfer, name string, size int64) error {
	if !IsZipArtifact(t.Paths, name) {
		return nil
	}
	cr := &chunkReader{ctx: ctx, store: s.store, id: t.ID, item: 1}
	if err := CheckZip(cr, size); err != nil {
		if cr.err != nil {
			return cr.err
		}
		return cairn.Invalid("content", err.Error())
	}
	return nil
}
