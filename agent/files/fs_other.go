//go:build !linux

package files

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Outside Linux the file manager works by path: Windows has no openat,
// and its links are reparse points, which the checks below refuse where
// Linux refuses links (below an upload destination). The checks and the
// uses are still separate calls here; docs/agent.md says so.

// isLink: a symbolic link, or on Windows any reparse point Go reports
// (junctions and mount points come back as irregular).
func isLink(fi fs.FileInfo) bool { return fi.Mode()&(fs.ModeSymlink|fs.ModeIrregular) != 0 }

func replaceText(dirPath, name string, content []byte) error {
	if fi, err := os.Lstat(dirPath); err != nil {
		return err
	} else if !fi.IsDir() {
		return errNotDir
	}
	p := filepath.Join(dirPath, name)
	mode := fs.FileMode(0o644)
	if fi, err := os.Lstat(p); err == nil {
		if !fi.Mode().IsRegular() {
			if fi.IsDir() {
				return errNotFile
			}
			return errNotRegular
		}
		mode = fi.Mode().Perm()
	} else if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	tmp, err := os.CreateTemp(dirPath, "."+name+".cairn-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // no-op once renamed
	_, err = tmp.WriteString(string(content))
	if err == nil {
		err = tmp.Chmod(mode) // on the handle, before close
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), p)
	}
	return err
}

func renameEntry(src, dst string) error { return os.Rename(src, dst) }

func renameIn(p, newName string) error { return os.Rename(p, filepath.Join(filepath.Dir(p), newName)) }

func copyTree(ctx context.Context, src, dst string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	fi, err := os.Lstat(src)
	if err != nil {
		return err
	}
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		target, err := os.Readlink(src)
		if err != nil {
			return err
		}
		return os.Symlink(target, dst)
	case isLink(fi):
		return nil
	case fi.IsDir():
		if err := os.Mkdir(dst, fi.Mode().Perm()|0o700); err != nil {
			return err
		}
		des, err := os.ReadDir(src)
		if err != nil {
			return err
		}
		for _, de := range des {
			if err := copyTree(ctx, filepath.Join(src, de.Name()), filepath.Join(dst, de.Name())); err != nil {
				return err
			}
		}
		return nil
	case fi.Mode().IsRegular():
		in, err := openChecked(src, fi)
		if err != nil {
			return err
		}
		defer in.Close()
		out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return err
		}
		if _, err := io.Copy(out, in); err != nil {
			out.Close()
			return err
		}
		if err := out.Chmod(fi.Mode().Perm()); err != nil {
			out.Close()
			return err
		}
		return out.Close()
	default:
		return nil
	}
}

// openChecked opens p and refuses it unless the opened file is the one
// Lstat answered (os.SameFile on the handle's own information).
func openChecked(p string, want fs.FileInfo) (*os.File, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err == nil && (!fi.Mode().IsRegular() || !os.SameFile(fi, want)) {
		err = errNotRegular
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

func openRegular(p string, follow bool) (*os.File, fs.FileInfo, error) {
	lfi, err := os.Lstat(p)
	if err != nil {
		return nil, nil, err
	}
	if isLink(lfi) && !follow {
		return nil, nil, errNotRegular
	}
	f, err := os.Open(p)
	if err != nil {
		return nil, nil, err
	}
	fi, err := f.Stat()
	if err == nil && fi.IsDir() {
		err = errNotFile
	} else if err == nil && !fi.Mode().IsRegular() {
		err = errNotRegular
	}
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, fi, nil
}

func removeEntry(p string) error {
	fi, err := os.Lstat(p)
	if err != nil {
		return err
	}
	if fi.IsDir() && !isLink(fi) {
		return os.RemoveAll(p)
	}
	return os.Remove(p)
}

func walkTree(root string, fn func(rel string, fi fs.FileInfo, open func() (*os.File, error)) error) error {
	base := filepath.Dir(root)
	return filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(base, p)
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		if fi.IsDir() {
			return fn(filepath.ToSlash(rel), fi, nil)
		}
		return fn(filepath.ToSlash(rel), fi, func() (*os.File, error) { return openChecked(p, fi) })
	})
}

type destDir struct{ path string }

func openDest(p string) (*destDir, error) {
	fi, err := os.Stat(p)
	if err != nil {
		return nil, err
	}
	if !fi.IsDir() {
		return nil, errNotDir
	}
	return &destDir{path: p}, nil
}

func (d *destDir) Close() error { return nil }
func (d *destDir) Name() string { return d.path }

// mkdirAll creates rel's directories below d, refusing a link or other
// reparse point as any component.
func (d *destDir) mkdirAll(rel string) (*destDir, error) {
	cur := d.path
	for _, c := range strings.Split(rel, "/") {
		if c == "" || c == "." {
			continue
		}
		cur = filepath.Join(cur, c)
		if err := os.Mkdir(cur, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
			return nil, err
		}
		fi, err := os.Lstat(cur)
		if err != nil {
			return nil, err
		}
		if isReparsePoint(cur, fi) || !fi.IsDir() {
			return nil, linkBelow(cur)
		}
	}
	return &destDir{path: cur}, nil
}

func (d *destDir) lstat(name string) (fs.FileInfo, error) {
	return os.Lstat(filepath.Join(d.path, name))
}

func (d *destDir) createTemp() (*os.File, string, error) {
	f, err := os.CreateTemp(d.path, ".cairn-upload-*")
	if err != nil {
		return nil, "", err
	}
	return f, filepath.Base(f.Name()), nil
}

func (d *destDir) rename(from, to string, replace bool) error {
	if !replace {
		if _, err := os.Lstat(filepath.Join(d.path, to)); err == nil {
			return &os.LinkError{Op: "rename", Old: from, New: to, Err: fs.ErrExist}
		}
	}
	return os.Rename(filepath.Join(d.path, from), filepath.Join(d.path, to))
}

func (d *destDir) remove(name string) { _ = os.Remove(filepath.Join(d.path, name)) }

func readDirNoFollow(p string) ([]fs.DirEntry, error) { return os.ReadDir(p) }
