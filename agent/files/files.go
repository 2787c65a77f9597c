package files

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"sort"
	"syscall"
	"unicode/utf8"

	"github.com/cairn-rmm/cairn/agent/proto"
)

// Failures the platform layer (fs_linux.go, fs_other.go) answers, named
// with their path by osError.
var (
	errNotFile    = errors.New("is a directory")
	errNotRegular = errors.New("is not a regular file")
	errNotDir     = errors.New("is not a directory")
)

// linkBelow refuses a link (or reparse point) found below an upload's
// destination, where nothing is followed.
func linkBelow(p string) *proto.Error {
	return refuse(proto.CodeFilePathInvalid, "%s is a symbolic link, reparse point or file below the destination; it is not followed", p)
}

func refuse(code, format string, args ...any) *proto.Error {
	return &proto.Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// osError classifies a failed file-system call.
func osError(p string, err error) *proto.Error {
	var pe *proto.Error
	switch {
	case errors.As(err, &pe):
		return pe
	case errors.Is(err, errNotFile):
		return refuse(proto.CodeFileNotFile, "%s is a directory", p)
	case errors.Is(err, errNotRegular):
		return refuse(proto.CodeFilePathInvalid, "%s is not a regular file", p)
	case errors.Is(err, errNotDir):
		return refuse(proto.CodeFileNotDirectory, "%s is not a directory", p)
	case errors.Is(err, syscall.ELOOP):
		return refuse(proto.CodeFilePathInvalid, "%s: a symbolic link appeared where none is followed", p)
	case errors.Is(err, fs.ErrNotExist):
		return refuse(proto.CodeFilePathNotFound, "%s does not exist", p)
	case errors.Is(err, fs.ErrExist):
		return refuse(proto.CodeFilePathExists, "%s already exists", p)
	case errors.Is(err, fs.ErrPermission):
		return refuse(proto.CodeOpPermission, "%s: permission denied", p)
	case errors.Is(err, syscall.ENOTDIR):
		return refuse(proto.CodeFileNotDirectory, "%s: a component is not a directory", p)
	default:
		return refuse(proto.CodeOpFailed, "%s: %v", p, err)
	}
}

// lstat checks a path and answers its own information (not a link's
// target's); device files, pipes and sockets are refused.
func (s *server) lstat(raw string) (string, fs.FileInfo, error) {
	p, err := CleanPath(s.goos, raw)
	if err != nil {
		return "", nil, err
	}
	fi, err := os.Lstat(p)
	if err != nil {
		return p, nil, osError(p, err)
	}
	if fi.Mode()&(fs.ModeDevice|fs.ModeCharDevice|fs.ModeNamedPipe|fs.ModeSocket|fs.ModeIrregular) != 0 {
		return p, nil, refuse(proto.CodeFilePathInvalid, "%s is a device file, pipe or socket", p)
	}
	return p, fi, nil
}

func entry(p string, fi fs.FileInfo) proto.FileEntry {
	e := proto.FileEntry{Name: fi.Name(), Path: p, Type: proto.FileTypeFile, Size: fi.Size(), ModifiedAt: fi.ModTime().UTC()}
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		e.Type = proto.FileTypeSymlink
	case fi.IsDir():
		e.Type, e.Size = proto.FileTypeDir, 0
	}
	return e
}

func (s *server) entryOf(p string) (proto.FileEntry, error) {
	fi, err := os.Lstat(p)
	if err != nil {
		return proto.FileEntry{}, osError(p, err)
	}
	e := entry(p, fi)
	if _, name, ok := Parent(s.goos, p); ok {
		e.Name = name
	}
	return e, nil
}

func (s *server) dir(raw string) (string, error) {
	p, fi, err := s.lstat(raw)
	if err != nil {
		return "", err
	}
	if !fi.IsDir() {
		return "", refuse(proto.CodeFileNotDirectory, "%s is not a directory", p)
	}
	return p, nil
}

func (s *server) list(raw string) (proto.FileList, error) {
	p, err := s.dir(raw)
	if err != nil {
		return proto.FileList{}, err
	}
	des, err := readDirNoFollow(p)
	if err != nil {
		return proto.FileList{}, osError(p, err)
	}
	out := proto.FileList{Path: p, Entries: []proto.FileEntry{}}
	for _, de := range des {
		if len(out.Entries) == proto.MaxListEntries {
			out.Truncated = true
			break
		}
		fi, err := de.Info()
		if err != nil {
			continue // removed while listing
		}
		out.Entries = append(out.Entries, entry(JoinPath(s.goos, p, de.Name()), fi))
	}
	sort.Slice(out.Entries, func(i, j int) bool {
		a, b := out.Entries[i], out.Entries[j]
		if (a.Type == proto.FileTypeDir) != (b.Type == proto.FileTypeDir) {
			return a.Type == proto.FileTypeDir
		}
		return a.Name < b.Name
	})
	return out, nil
}

// IsText reports whether b is text the editor may show: valid UTF-8 with
// no NUL and no control characters beyond tab, newline, carriage return,
// form feed and escape (which also bounds its JSON encoding).
func IsText(b []byte) bool {
	if !utf8.Valid(b) {
		return false
	}
	for _, c := range b {
		if c < 0x20 && c != '\t' && c != '\n' && c != '\r' && c != '\f' && c != 0x1b {
			return false
		}
	}
	return true
}

func (s *server) readText(raw string) (proto.FileText, error) {
	p, fi, err := s.lstat(raw)
	if err != nil {
		return proto.FileText{}, err
	}
	if fi.IsDir() {
		return proto.FileText{}, refuse(proto.CodeFileNotFile, "%s is a directory", p)
	}
	// Reading follows a link; the file checked is the one opened (fstat
	// on its descriptor), so a link swapped in cannot bring a device.
	f, fi, err := openRegular(p, fi.Mode()&fs.ModeSymlink != 0)
	if err != nil {
		if errors.Is(err, errNotRegular) {
			return proto.FileText{}, refuse(proto.CodeFilePathInvalid, "%s is a device file, pipe or socket", p)
		}
		return proto.FileText{}, osError(p, err)
	}
	defer f.Close()
	if fi.Size() > proto.MaxTextBytes {
		return proto.FileText{}, refuse(proto.CodeFileTooLarge, "%s is %d bytes; the editor opens files up to %d bytes", p, fi.Size(), proto.MaxTextBytes)
	}
	b, err := io.ReadAll(io.LimitReader(f, proto.MaxTextBytes+1))
	if err != nil {
		return proto.FileText{}, osError(p, err)
	}
	if len(b) > proto.MaxTextBytes {
		return proto.FileText{}, refuse(proto.CodeFileTooLarge, "%s grew beyond %d bytes", p, proto.MaxTextBytes)
	}
	if !IsText(b) {
		return proto.FileText{}, refuse(proto.CodeFileBinary, "%s is not a text file", p)
	}
	return proto.FileText{Path: p, Content: string(b), Size: int64(len(b)), ModifiedAt: fi.ModTime().UTC()}, nil
}

// writeText replaces a file's content atomically: a temporary file in
// the same directory, synced, given the old file's mode, renamed over it.
func (s *server) writeText(raw, content string) (proto.FileWritten, error) {
	p, err := CleanPath(s.goos, raw)
	if err != nil {
		return proto.FileWritten{}, err
	}
	if len(content) > proto.MaxTextBytes {
		return proto.FileWritten{}, refuse(proto.CodeFileTooLarge, "the content is %d bytes; at most %d", len(content), proto.MaxTextBytes)
	}
	if !IsText([]byte(content)) {
		return proto.FileWritten{}, refuse(proto.CodeFileBinary, "the content is not text")
	}
	dir, name, ok := Parent(s.goos, p)
	if !ok {
		return proto.FileWritten{}, refuse(proto.CodeFileNotFile, "%s is a root", p)
	}
	if _, err := s.dir(dir); err != nil {
		return proto.FileWritten{}, err
	}
	if err := replaceText(dir, name, []byte(content)); err != nil {
		return proto.FileWritten{}, osError(p, err)
	}
	return proto.FileWritten{Path: p, Size: int64(len(content))}, nil
}

func (s *server) mkdir(raw string) (proto.FileEntries, error) {
	p, err := CleanPath(s.goos, raw)
	if err != nil {
		return proto.FileEntries{}, err
	}
	if err := os.Mkdir(p, 0o755); err != nil {
		return proto.FileEntries{}, osError(p, err)
	}
	e, err := s.entryOf(p)
	return proto.FileEntries{Entries: []proto.FileEntry{e}}, err
}

func (s *server) rename(raw, newName string) (proto.FileEntries, error) {
	p, _, err := s.lstat(raw)
	if err != nil {
		return proto.FileEntries{}, err
	}
	if err := CheckName(s.goos, newName); err != nil {
		return proto.FileEntries{}, err
	}
	dir, old, ok := Parent(s.goos, p)
	if !ok {
		return proto.FileEntries{}, refuse(proto.CodeFilePathInvalid, "a root cannot be renamed")
	}
	target := JoinPath(s.goos, dir, newName)
	// A case-only rename on Windows names the same file: allowed.
	if !SameName(s.goos, old, newName) {
		if _, err := os.Lstat(target); err == nil {
			return proto.FileEntries{}, refuse(proto.CodeFilePathExists, "%s already exists", target)
		}
	}
	var err2 error
	if SameName(s.goos, old, newName) {
		err2 = os.Rename(p, target) // the same file under another case (Windows)
	} else {
		err2 = renameIn(p, newName)
	}
	if err := err2; err != nil {
		return proto.FileEntries{}, osError(target, err)
	}
	e, err := s.entryOf(target)
	return proto.FileEntries{Entries: []proto.FileEntry{e}}, err
}

// transfer moves (or copies, recursively) each path into destination,
// refusing names that exist there and directories put into themselves.
func (s *server) transfer(ctx context.Context, paths []string, destination string, move bool) (proto.FileEntries, error) {
	dest, err := s.dir(destination)
	if err != nil {
		return proto.FileEntries{}, err
	}
	out := proto.FileEntries{Entries: []proto.FileEntry{}}
	for _, raw := range paths {
		p, fi, err := s.lstat(raw)
		if err != nil {
			return out, err
		}
		_, name, ok := Parent(s.goos, p)
		if !ok {
			return out, refuse(proto.CodeFilePathInvalid, "a root cannot be moved or copied")
		}
		if fi.IsDir() && Within(s.goos, p, dest) {
			return out, refuse(proto.CodeFilePathInvalid, "%s cannot go inside itself", p)
		}
		target := JoinPath(s.goos, dest, name)
		if _, err := os.Lstat(target); err == nil {
			return out, refuse(proto.CodeFilePathExists, "%s already exists", target)
		}
		if move {
			err = renameEntry(p, target)
			if errors.Is(err, syscall.EXDEV) {
				if err = copyTree(ctx, p, target); err == nil {
					err = removeEntry(p)
				}
			}
		} else {
			err = copyTree(ctx, p, target)
		}
		if err != nil {
			return out, osError(target, err)
		}
		e, err := s.entryOf(target)
		if err != nil {
			return out, err
		}
		out.Entries = append(out.Entries, e)
	}
	return out, nil
}

// delete removes each path: directories recursively, links as links
// (never followed, by descriptor on Linux). Roots are refused.
func (s *server) delete(paths []string) (proto.FileEntries, error) {
	out := proto.FileEntries{Entries: []proto.FileEntry{}}
	for _, raw := range paths {
		p, fi, err := s.lstat(raw)
		if err != nil {
			return out, err
		}
		if IsRoot(s.goos, p) {
			return out, refuse(proto.CodeFilePathInvalid, "a root cannot be deleted")
		}
		e := entry(p, fi)
		if _, name, ok := Parent(s.goos, p); ok {
			e.Name = name
		}
		if err := removeEntry(p); err != nil {
			return out, osError(p, err)
		}
		out.Entries = append(out.Entries, e)
	}
	return out, nil
}

func (s *server) conflicts(destination string, names []string) (proto.FileConflicts, error) {
	dest, err := s.dir(destination)
	if err != nil {
		return proto.FileConflicts{}, err
	}
	des, err := os.ReadDir(dest)
	if err != nil {
		return proto.FileConflicts{}, osError(dest, err)
	}
	out := proto.FileConflicts{Destination: dest, Conflicts: []proto.FileEntry{}}
	for _, n := range names {
		for _, de := range des {
			if !SameName(s.goos, n, de.Name()) {
				continue
			}
			if fi, err := de.Info(); err == nil {
				out.Conflicts = append(out.Conflicts, entry(JoinPath(s.goos, dest, de.Name()), fi))
			}
			break
		}
	}
	return out, nil
}
