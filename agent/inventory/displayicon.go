package inventory

import (
	"bytes"
	"debug/pe"
	"encoding/binary"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/cairn-rmm/cairn/agent/proto"
)

// parseDisplayIcon reads an uninstall entry's DisplayIcon (or an icon
// override's display_icon): a path, maybe quoted, maybe followed by
// ",<index>" (an .exe or .dll's icon: the index-th icon group, or with a
// minus sign the group of that resource ID).
func parseDisplayIcon(s string) (path string, index int, ok bool) {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, ','); i > 0 {
		if n, err := strconv.Atoi(strings.TrimSpace(s[i+1:])); err == nil {
			s, index = strings.TrimSpace(s[:i]), n
		}
	}
	s = strings.Trim(s, `"`)
	if s == "" || strings.ContainsAny(s, "\"\x00") {
		return "", 0, false
	}
	return s, index, true
}

// loadDisplayIcon reads the icon a DisplayIcon names: an .ico, .png or
// .svg file as it is, or an icon group of an .exe or .dll (another
// extension) made into an .ico file.
func loadDisplayIcon(displayIcon string) (proto.SoftwareIcon, error) {
	path, index, ok := parseDisplayIcon(displayIcon)
	if !ok {
		return proto.SoftwareIcon{}, fmt.Errorf("DisplayIcon %q names no file", displayIcon)
	}
	switch strings.ToLower(filepath.Ext(path)) {
	case ".ico", ".png", ".svg":
		return readIconFile(path)
	}
	f, err := pe.Open(path)
	if err != nil {
		return proto.SoftwareIcon{}, err
	}
	defer f.Close()
	ico, err := peIcon(f, index)
	if err != nil {
		return proto.SoftwareIcon{}, fmt.Errorf("%s: %w", path, err)
	}
	return iconFromBytes(ico)
}

// Resource types of a PE file's icons.
const (
	rtIcon      = 3
	rtGroupIcon = 14
)

// resEntry is one entry of a resource directory: by ID or by name, and
// a subdirectory or data.
type resEntry struct {
	id     uint32
	named  bool
	offset uint32 // into the section
	dir    bool
}

// peIcon builds an .ico file from the index-th icon group of f (or, for
// a negative index, the group whose ID is -index), the way Windows' icon
// extraction counts them.
func peIcon(f *pe.File, index int) ([]byte, error) {
	sec := f.Section(".rsrc")
	if sec == nil {
		return nil, errors.New("no resources")
	}
	data, err := sec.Data()
	if err != nil {
		return nil, err
	}
	entries := func(off uint32) ([]resEntry, error) {
		if int(off)+16 > len(data) {
			return nil, errors.New("resource directory outside its section")
		}
		n := int(binary.LittleEndian.Uint16(data[off+12:])) + int(binary.LittleEndian.Uint16(data[off+14:]))
		if int(off)+16+8*n > len(data) {
			return nil, errors.New("resource directory outside its section")
		}
		out := make([]resEntry, n)
		for i := range n {
			e := data[int(off)+16+8*i:]
			name, target := binary.LittleEndian.Uint32(e), binary.LittleEndian.Uint32(e[4:])
			out[i] = resEntry{id: name &^ (1 << 31), named: name&(1<<31) != 0, offset: target &^ (1 << 31), dir: target&(1<<31) != 0}
		}
		return out, nil
	}
	// leaf returns the bytes of the first language of a type/name entry.
	leaf := func(e resEntry) ([]byte, error) {
		for e.dir {
			langs, err := entries(e.offset)
			if err != nil || len(langs) == 0 {
				return nil, errors.New("an empty resource")
			}
			e = langs[0]
		}
		if int(e.offset)+16 > len(data) {
			return nil, errors.New("resource data entry outside its section")
		}
		rva, size := binary.LittleEndian.Uint32(data[e.offset:]), binary.LittleEndian.Uint32(data[e.offset+4:])
		start := int64(rva) - int64(sec.VirtualAddress)
		if start < 0 || start+int64(size) > int64(len(data)) || size > proto.MaxSoftwareIconBytes {
			return nil, errors.New("resource data outside its section or too large")
		}
		return data[start : start+int64(size)], nil
	}
	root, err := entries(0)
	if err != nil {
		return nil, err
	}
	var groups, icons []resEntry
	for _, e := range root {
		if e.named || !e.dir {
			continue
		}
		switch e.id {
		case rtGroupIcon:
			groups, err = entries(e.offset)
		case rtIcon:
			icons, err = entries(e.offset)
		}
		if err != nil {
			return nil, err
		}
	}
	var group *resEntry
	switch {
	case index >= 0 && index < len(groups):
		group = &groups[index]
	case index < 0:
		for i := range groups {
			if !groups[i].named && groups[i].id == uint32(-index) {
				group = &groups[i]
			}
		}
	}
	if group == nil {
		return nil, fmt.Errorf("no icon group %d (of %d)", index, len(groups))
	}
	dir, err := leaf(*group)
	if err != nil {
		return nil, err
	}
	if len(dir) < 6 {
		return nil, errors.New("a truncated icon group")
	}
	n := int(binary.LittleEndian.Uint16(dir[4:]))
	if n < 1 || len(dir) < 6+14*n {
		return nil, errors.New("a truncated icon group")
	}
	byID := map[uint32]resEntry{}
	for _, e := range icons {
		if !e.named {
			byID[e.id] = e
		}
	}
	// The .ico file: the group's header, each entry with its image's
	// offset in the file instead of its resource ID, then the images.
	var head, body bytes.Buffer
	head.Write([]byte{0, 0, 1, 0})
	_ = binary.Write(&head, binary.LittleEndian, uint16(n))
	offset := 6 + 16*n
	for i := range n {
		e := dir[6+14*i : 6+14*(i+1)]
		img, ok := byID[uint32(binary.LittleEndian.Uint16(e[12:]))]
		if !ok {
			return nil, errors.New("an icon group names a missing icon")
		}
		b, err := leaf(img)
		if err != nil {
			return nil, err
		}
		head.Write(e[:8])
		_ = binary.Write(&head, binary.LittleEndian, uint32(len(b)))
		_ = binary.Write(&head, binary.LittleEndian, uint32(offset+body.Len()))
		body.Write(b)
		if head.Len()+body.Len() > proto.MaxSoftwareIconBytes {
			return nil, errors.New("the icon is too large")
		}
	}
	return append(head.Bytes(), body.Bytes()...), nil
}
