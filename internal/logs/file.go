package logs

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"

	"gopkg.in/natefinch/lumberjack.v2"
)

// FileOptions configure the rotating file sink an Engine or worker
// process writes its JSON lines to, beside its stderr (CAIRN_LOG_DIR,
// CAIRN_LOG_MAX_MB, CAIRN_LOG_MAX_FILES): GET /api/server/logs reads
// them.
type FileOptions struct {
	// Dir holds the files; Source names them (<source>.log, rotated to
	// <source>-<time>.log).
	Dir    string
	Source string
	// MaxMB is one file's size before it is rotated; MaxFiles how many
	// rotated files are kept besides the current one.
	MaxMB    int
	MaxFiles int
}

// Defaults of the file sink.
const (
	DefaultMaxMB    = 50
	DefaultMaxFiles = 5
)

// sourceName is a log source's name: it names files and is a path
// segment of the logs route.
var sourceName = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,62}$`)

// ValidSource reports whether name can name a log source.
func ValidSource(name string) bool { return sourceName.MatchString(name) }

// OpenFile returns the rotating writer of o. The directory is made
// private to the Engine's user (0700): lines are redacted, but they name
// devices, operators and addresses.
func OpenFile(o FileOptions) (io.WriteCloser, error) {
	if !ValidSource(o.Source) {
		return nil, fmt.Errorf("logs: invalid source name %q", o.Source)
	}
	if o.MaxMB <= 0 {
		o.MaxMB = DefaultMaxMB
	}
	if o.MaxFiles <= 0 {
		o.MaxFiles = DefaultMaxFiles
	}
	if err := os.MkdirAll(o.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("logs: make %s: %w", o.Dir, err)
	}
	lj := &lumberjack.Logger{Filename: filepath.Join(o.Dir, o.Source+".log"), MaxSize: o.MaxMB, MaxBackups: o.MaxFiles, LocalTime: false}
	// Open now, so a directory that cannot be written fails at start-up.
	if _, err := lj.Write(nil); err != nil {
		return nil, fmt.Errorf("logs: open %s: %w", lj.Filename, err)
	}
	return lj, nil
}

// NewTee is New writing also JSON lines (whatever format stderr has, so
// the logs route can parse them) to file, both redacted.
func NewTee(w io.Writer, format string, level slog.Level, file io.Writer) *slog.Logger {
	opts := &slog.HandlerOptions{Level: level}
	var h slog.Handler = slog.NewJSONHandler(w, opts)
	if format == FormatText {
		h = slog.NewTextHandler(w, opts)
	}
	return slog.New(Redact(slog.NewMultiHandler(h, slog.NewJSONHandler(file, opts))))
}
