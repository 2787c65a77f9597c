package logs

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Bounds of a read (documented in docs/api.md "Server logs").
const (
	// DefaultLimit and MaxLimit bound the entries one read answers.
	DefaultLimit = 200
	MaxLimit     = 1000
	// MaxScanBytes bounds the bytes one read scans, newest first, across
	// a source's files: a filter matching nothing costs at most this.
	MaxScanBytes = 8 << 20
	// MaxLineBytes is the longest line read; a longer one is skipped.
	MaxLineBytes = 256 << 10
)

// Source is one process's log files in the log directory.
type Source struct {
	Name      string    `json:"name"`
	Files     int       `json:"files"`
	SizeBytes int64     `json:"size_bytes"`
	Modified  time.Time `json:"modified_at"`
}

// Sources lists the log sources in dir (none when dir is missing).
func Sources(dir string) ([]Source, error) {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return []Source{}, nil
	}
	if err != nil {
		return nil, err
	}
	by := map[string]*Source{}
	for _, e := range ents {
		name, ok := sourceOf(e.Name())
		if !ok || !e.Type().IsRegular() {
			continue
		}
		info, err := e.Info()
		if err != nil {
			continue
		}
		s := by[name]
		if s == nil {
			s = &Source{Name: name}
			by[name] = s
		}
		s.Files++
		s.SizeBytes += info.Size()
		if info.ModTime().After(s.Modified) {
			s.Modified = info.ModTime().UTC()
		}
	}
	out := make([]Source, 0, len(by))
	for _, s := range by {
		out = append(out, *s)
	}
	slices.SortFunc(out, func(a, b Source) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// sourceOf names the source of a file: <source>.log or a rotated
// <source>-<time>.log.
func sourceOf(file string) (string, bool) {
	base, ok := strings.CutSuffix(file, ".log")
	if !ok {
		return "", false
	}
	if ValidSource(base) {
		// A rotated file's time has dots and capitals: never valid.
		return base, true
	}
	if i := strings.Index(base, "-20"); i > 0 && ValidSource(base[:i]) {
		return base[:i], true
	}
	return "", false
}

// files are source's files in dir, newest first: the current file, then
// the rotated ones by their time (lumberjack's names sort by time).
func files(dir, source string) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var rotated []string
	current := ""
	for _, e := range ents {
		if s, ok := sourceOf(e.Name()); !ok || s != source || !e.Type().IsRegular() {
			continue
		}
		if e.Name() == source+".log" {
			current = e.Name()
		} else {
			rotated = append(rotated, e.Name())
		}
	}
	slices.Sort(rotated)
	slices.Reverse(rotated)
	if current != "" {
		rotated = append([]string{current}, rotated...)
	}
	return rotated, nil
}

// Query filters a read. Zero values filter nothing.
type Query struct {
	// MinLevel keeps entries at this level or above (set HasLevel).
	MinLevel slog.Level
	HasLevel bool
	Since    time.Time
	Until    time.Time
	// Text keeps entries whose redacted line contains it, case-insensitively.
	Text  string
	Limit int
	// MaxScan overrides MaxScanBytes (tests).
	MaxScan int64
}

// Entry is one redacted log line.
type Entry struct {
	Time    time.Time      `json:"time"`
	Level   string         `json:"level"`
	Message string         `json:"msg"`
	Attrs   map[string]any `json:"attrs"`
}

// Result is a read's answer, oldest entry first.
type Result struct {
	Entries []Entry `json:"entries"`
	// Truncated: the scan budget ended the read before the files did
	// (older matching entries may exist).
	Truncated    bool  `json:"truncated"`
	ScannedBytes int64 `json:"scanned_bytes"`
}

// ErrNoSource is returned for a source without files.
var ErrNoSource = errors.New("logs: no such source")

// Read returns the newest entries of source in dir matching q, scanning
// at most q.MaxScan (MaxScanBytes) bytes from the newest line backwards.
func Read(dir, source string, q Query) (Result, error) {
	if !ValidSource(source) {
		return Result{}, ErrNoSource
	}
	names, err := files(dir, source)
	if errors.Is(err, fs.ErrNotExist) || (err == nil && len(names) == 0) {
		return Result{}, ErrNoSource
	}
	if err != nil {
		return Result{}, err
	}
	if q.Limit <= 0 || q.Limit > MaxLimit {
		q.Limit = DefaultLimit
	}
	budget := q.MaxScan
	if budget <= 0 {
		budget = MaxScanBytes
	}
	res := Result{Entries: []Entry{}}
	stop := false
	for _, name := range names {
		if stop {
			break
		}
		err := scanBackwards(filepath.Join(dir, name), &budget, &res.ScannedBytes, func(line []byte) bool {
			e, ok := ParseLine(line)
			if !ok {
				return true
			}
			if !q.Since.IsZero() && e.Time.Before(q.Since) {
				// Older lines follow: the read is done.
				stop = true
				return false
			}
			if q.Match(e) {
				res.Entries = append(res.Entries, e)
				if len(res.Entries) >= q.Limit {
					stop = true
					return false
				}
			}
			return true
		})
		if err != nil {
			return Result{}, err
		}
		if budget <= 0 && !stop {
			res.Truncated = true
			break
		}
	}
	slices.Reverse(res.Entries)
	return res, nil
}

// Match reports whether e passes q's filters (the limit aside).
func (q Query) Match(e Entry) bool {
	if q.HasLevel {
		var l slog.Level
		if l.UnmarshalText([]byte(e.Level)) != nil || l < q.MinLevel {
			return false
		}
	}
	if !q.Since.IsZero() && e.Time.Before(q.Since) {
		return false
	}
	if !q.Until.IsZero() && e.Time.After(q.Until) {
		return false
	}
	if q.Text != "" {
		// Matched on the redacted entry: a search cannot probe a secret.
		b, _ := json.Marshal(e)
		if !strings.Contains(strings.ToLower(string(b)), strings.ToLower(q.Text)) {
			return false
		}
	}
	return true
}

// chunk is how much scanBackwards reads at once.
const chunk = 64 << 10

// scanBackwards calls fn with path's complete lines, last first, until fn
// returns false or the budget is spent (each byte read counts once).
func scanBackwards(path string, budget, scanned *int64, fn func([]byte) bool) error {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil // rotated away meanwhile
	}
	if err != nil {
		return err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return err
	}
	pos := info.Size()
	var carry []byte
	buf := make([]byte, chunk)
	for pos > 0 && *budget > 0 {
		n := int64(chunk)
		n = min(n, pos, *budget)
		pos -= n
		if _, err := f.ReadAt(buf[:n], pos); err != nil && err != io.EOF {
			return err
		}
		*budget -= n
		*scanned += n
		data := append(append([]byte{}, buf[:n]...), carry...)
		for {
			i := bytes.LastIndexByte(data, '\n')
			if i < 0 {
				break
			}
			line := data[i+1:]
			data = data[:i]
			if len(line) > 0 && !fn(line) {
				return nil
			}
		}
		carry = data
		if len(carry) > MaxLineBytes {
			carry = nil // an overlong line is skipped
		}
	}
	if pos == 0 && len(carry) > 0 {
		fn(carry)
	}
	return nil
}

// ParseLine decodes a JSON log line and redacts it again (a line written
// by another process, or before a redaction rule existed, is served no
// less safely): ok is false for a line that is not a JSON object.
func ParseLine(line []byte) (Entry, bool) {
	var m map[string]any
	if json.Unmarshal(line, &m) != nil || m == nil {
		return Entry{}, false
	}
	e := Entry{Attrs: map[string]any{}}
	for k, v := range m {
		switch k {
		case slog.TimeKey:
			if s, ok := v.(string); ok {
				e.Time, _ = time.Parse(time.RFC3339Nano, s)
			}
		case slog.LevelKey:
			e.Level, _ = v.(string)
		case slog.MessageKey:
			s, _ := v.(string)
			e.Message = scrub(s)
		default:
			e.Attrs[k] = redactValue(k, v)
		}
	}
	return e, true
}

// redactValue applies Redact's rules to a decoded JSON value under key.
func redactValue(key string, v any) any {
	if SecretKey(key) {
		return Redacted
	}
	switch x := v.(type) {
	case string:
		return scrub(x)
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, vv := range x {
			out[k] = redactValue(k, vv)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, vv := range x {
			out[i] = redactValue("", vv)
		}
		return out
	}
	return v
}
