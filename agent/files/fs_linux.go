//go:build linux

package files

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// The file manager runs as root while local users may own the
// directories it works in, so every check and the use that follows it
// go through one descriptor: a directory is opened once (its last
// component never followed) and names in it are looked up, created,
// renamed and removed relative to that descriptor with O_NOFOLLOW or
// AT_SYMLINK_NOFOLLOW. A link swapped in after a check is then seen as
// a link (refused, or handled as a link), never followed.

// useOpenat2 is cleared when the kernel (or a seccomp filter) refuses
// openat2; the tests clear it to run the per-component walk.
var useOpenat2 atomic.Bool

func init() { useOpenat2.Store(true) }

const dirFlags = unix.O_RDONLY | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC

// openDir opens directory p; a link as its last component is refused
// (ELOOP or ENOTDIR), the components before it resolve once, now.
func openDir(p string) (*os.File, error) {
	fd, err := unix.Open(p, dirFlags, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: p, Err: err}
	}
	return os.NewFile(uintptr(fd), p), nil
}

// openParent opens the directory holding clean path p and answers p's
// last component. follow says whether a link as that directory's own
// last component is followed: yes where the file manager never checked
// it (the directory of a path the operator named, resolved once, now),
// no where it checked it is a directory (a destination).
func openParent(p string, follow bool) (*os.File, string, error) {
	d, n := filepath.Dir(p), filepath.Base(p)
	if !follow {
		f, err := openDir(d)
		return f, n, err
	}
	fd, err := unix.Open(d, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, "", &fs.PathError{Op: "open", Path: d, Err: err}
	}
	return os.NewFile(uintptr(fd), d), n, nil
}

// openBeneath opens rel (slash-separated, already checked to hold no
// "..") below dir without following any link: openat2 with
// RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS where the kernel has it, else a
// walk opening each component with O_NOFOLLOW.
func openBeneath(dir *os.File, rel string, flags int, mode uint32) (int, error) {
	flags |= unix.O_CLOEXEC
	if useOpenat2.Load() {
		fd, err := unix.Openat2(int(dir.Fd()), rel, &unix.OpenHow{Flags: uint64(flags), Mode: uint64(mode),
			Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS})
		if !errors.Is(err, unix.ENOSYS) && !errors.Is(err, unix.EPERM) {
			return fd, err
		}
		useOpenat2.Store(false)
	}
	parts := strings.Split(rel, "/")
	cur := int(dir.Fd())
	for i, c := range parts {
		if c == "" || c == "." || c == ".." {
			closeIf(cur, dir)
			return -1, unix.EINVAL
		}
		f := dirFlags
		if i == len(parts)-1 {
			f = flags | unix.O_NOFOLLOW
		}
		fd, err := unix.Openat(cur, c, f, mode)
		closeIf(cur, dir)
		if err != nil {
			return -1, err
		}
		cur = fd
	}
	return cur, nil
}

func closeIf(fd int, keep *os.File) {
	if fd != int(keep.Fd()) {
		unix.Close(fd)
	}
}

// lstatAt answers name's own information in dir (a link's, not its
// target's), through an O_PATH descriptor.
func lstatAt(dir *os.File, name string) (fs.FileInfo, error) {
	fd, err := unix.Openat(int(dir.Fd()), name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "lstat", Path: filepath.Join(dir.Name(), name), Err: err}
	}
	f := os.NewFile(uintptr(fd), filepath.Join(dir.Name(), name))
	defer f.Close()
	return f.Stat()
}

// createTempAt creates a new file named prefix+random in dir, mode 0600.
func createTempAt(dir *os.File, prefix string) (*os.File, string, error) {
	for {
		var b [8]byte
		_, _ = rand.Read(b[:])
		name := prefix + hex.EncodeToString(b[:])
		fd, err := unix.Openat(int(dir.Fd()), name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
		if errors.Is(err, unix.EEXIST) {
			continue
		}
		if err != nil {
			return nil, "", &fs.PathError{Op: "create", Path: filepath.Join(dir.Name(), name), Err: err}
		}
		return os.NewFile(uintptr(fd), filepath.Join(dir.Name(), name)), name, nil
	}
}

// renameAt renames within or across two open directories; without
// replace an existing target is refused atomically (RENAME_NOREPLACE).
func renameAt(from *os.File, fromName string, to *os.File, toName string, replace bool) error {
	var err error
	if replace {
		err = unix.Renameat(int(from.Fd()), fromName, int(to.Fd()), toName)
	} else {
		err = unix.Renameat2(int(from.Fd()), fromName, int(to.Fd()), toName, unix.RENAME_NOREPLACE)
		if errors.Is(err, unix.EINVAL) {
			// A file system without RENAME_NOREPLACE (older NFS, some
			// FUSE): the check and the rename are two calls there, still
			// by descriptor.
			if _, lerr := lstatAt(to, toName); lerr == nil {
				err = unix.EEXIST
			} else {
				err = unix.Renameat(int(from.Fd()), fromName, int(to.Fd()), toName)
			}
		}
	}
	if err != nil {
		return &os.LinkError{Op: "rename", Old: filepath.Join(from.Name(), fromName), New: filepath.Join(to.Name(), toName), Err: err}
	}
	return nil
}

// replaceText writes content to dir/name through a temporary file in the
// same directory, given the old file's mode on its descriptor before it
// is closed, renamed over the old file by descriptor.
func replaceText(dirPath, name string, content []byte) error {
	d, err := openDir(dirPath)
	if err != nil {
		return err
	}
	defer d.Close()
	mode := fs.FileMode(0o644)
	if fi, err := lstatAt(d, name); err == nil {
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
	tmp, tmpName, err := createTempAt(d, "."+name+".cairn-")
	if err != nil {
		return err
	}
	_, err = tmp.Write(content)
	if err == nil {
		err = tmp.Chmod(mode) // fchmod: the file we wrote, whatever its name now holds
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = renameAt(d, tmpName, d, name, true)
	}
	if err != nil {
		_ = unix.Unlinkat(int(d.Fd()), tmpName, 0)
	}
	return err
}

// renameEntry moves src into the checked destination directory as dst,
// refusing an existing dst atomically.
func renameEntry(src, dst string) error {
	from, sn, err := openParent(src, true)
	if err != nil {
		return err
	}
	defer from.Close()
	to, dn, err := openParent(dst, false)
	if err != nil {
		return err
	}
	defer to.Close()
	return renameAt(from, sn, to, dn, false)
}

// renameIn renames a name within the directory holding p.
func renameIn(p, newName string) error {
	dir, n, err := openParent(p, true)
	if err != nil {
		return err
	}
	defer dir.Close()
	return renameAt(dir, n, dir, newName, false)
}

// copyTree copies src into the checked destination directory as dst:
// directories recursively, links as links, regular files with their
// mode; anything else is skipped. Every step is relative to descriptors
// of the directories already opened.
func copyTree(ctx context.Context, src, dst string) error {
	from, sn, err := openParent(src, true)
	if err != nil {
		return err
	}
	defer from.Close()
	to, dn, err := openParent(dst, false)
	if err != nil {
		return err
	}
	defer to.Close()
	return copyAt(ctx, from, sn, to, dn)
}

func copyAt(ctx context.Context, from *os.File, name string, to *os.File, toName string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	fi, err := lstatAt(from, name)
	if err != nil {
		return err
	}
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		target, err := readlinkAt(from, name)
		if err != nil {
			return err
		}
		return unix.Symlinkat(target, int(to.Fd()), toName)
	case fi.IsDir():
		sfd, err := unix.Openat(int(from.Fd()), name, dirFlags, 0)
		if err != nil {
			return err // a link swapped in: ELOOP/ENOTDIR
		}
		sdir := os.NewFile(uintptr(sfd), filepath.Join(from.Name(), name))
		defer sdir.Close()
		if err := unix.Mkdirat(int(to.Fd()), toName, uint32(fi.Mode().Perm()|0o700)); err != nil {
			return err
		}
		dfd, err := unix.Openat(int(to.Fd()), toName, dirFlags, 0)
		if err != nil {
			return err
		}
		ddir := os.NewFile(uintptr(dfd), filepath.Join(to.Name(), toName))
		defer ddir.Close()
		names, err := sdir.Readdirnames(-1)
		if err != nil {
			return err
		}
		for _, n := range names {
			if err := copyAt(ctx, sdir, n, ddir, n); err != nil {
				return err
			}
		}
		return nil
	case fi.Mode().IsRegular():
		in, err := openRegularAt(from, name)
		if err != nil {
			return err
		}
		defer in.Close()
		fd, err := unix.Openat(int(to.Fd()), toName, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
		if err != nil {
			return err
		}
		out := os.NewFile(uintptr(fd), filepath.Join(to.Name(), toName))
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

func readlinkAt(dir *os.File, name string) (string, error) {
	for n := 256; ; n *= 2 {
		b := make([]byte, n)
		k, err := unix.Readlinkat(int(dir.Fd()), name, b)
		if err != nil {
			return "", err
		}
		if k < n {
			return string(b[:k]), nil
		}
	}
}

// openRegularAt opens name in dir for reading without following a link
// and without blocking on a FIFO, and refuses what is not a regular file
// by the descriptor's own fstat.
func openRegularAt(dir *os.File, name string) (*os.File, error) {
	fd, err := unix.Openat(int(dir.Fd()), name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	return regularFile(fd, filepath.Join(dir.Name(), name))
}

func regularFile(fd int, name string) (*os.File, error) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		unix.Close(fd)
		return nil, errNotRegular
	}
	if err := unix.SetNonblock(fd, false); err != nil {
		unix.Close(fd)
		return nil, err
	}
	return os.NewFile(uintptr(fd), name), nil
}

// openRegular opens clean path p for reading: a link as its last
// component is followed only when follow is set; the file read is the
// one checked (fstat on the descriptor), never a FIFO or a device.
func openRegular(p string, follow bool) (*os.File, fs.FileInfo, error) {
	flags := unix.O_RDONLY | unix.O_NONBLOCK | unix.O_NOCTTY | unix.O_CLOEXEC
	if !follow {
		flags |= unix.O_NOFOLLOW
	}
	fd, err := unix.Open(p, flags, 0)
	if err != nil {
		return nil, nil, &fs.PathError{Op: "open", Path: p, Err: err}
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, nil, err
	}
	if st.Mode&unix.S_IFMT == unix.S_IFDIR {
		unix.Close(fd)
		return nil, nil, errNotFile
	}
	f, err := regularFile(fd, p)
	if err != nil {
		return nil, nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, fi, nil
}

// removeEntry removes clean path p: a directory recursively, anything
// else (a link included) by unlinking the name; nothing is followed.
func removeEntry(p string) error {
	dir, n, err := openParent(p, true)
	if err != nil {
		return err
	}
	defer dir.Close()
	return removeAt(dir, n)
}

func removeAt(dir *os.File, name string) error {
	err := unix.Unlinkat(int(dir.Fd()), name, 0)
	if err == nil || !(errors.Is(err, unix.EISDIR) || errors.Is(err, unix.EPERM)) {
		return err
	}
	fd, err := unix.Openat(int(dir.Fd()), name, dirFlags, 0)
	if err != nil {
		return err
	}
	sub := os.NewFile(uintptr(fd), filepath.Join(dir.Name(), name))
	names, err := sub.Readdirnames(-1)
	if err == nil {
		for _, n := range names {
			if err = removeAt(sub, n); err != nil {
				break
			}
		}
	}
	sub.Close()
	if err != nil {
		return err
	}
	return unix.Unlinkat(int(dir.Fd()), name, unix.AT_REMOVEDIR)
}

// walkTree calls fn for root and everything below it, depth first, with
// the path relative to root's parent (slash-separated), its own
// information, and for regular files an opener that opens that very
// file (no link followed, fstat checked). Directories are walked by
// descriptor, so a directory swapped for a link is not entered.
func walkTree(root string, fn func(rel string, fi fs.FileInfo, open func() (*os.File, error)) error) error {
	dir, n, err := openParent(root, true)
	if err != nil {
		return err
	}
	defer dir.Close()
	return walkAt(dir, n, n, fn)
}

func walkAt(dir *os.File, name, rel string, fn func(string, fs.FileInfo, func() (*os.File, error)) error) error {
	fi, err := lstatAt(dir, name)
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return fn(rel, fi, func() (*os.File, error) { return openRegularAt(dir, name) })
	}
	if err := fn(rel, fi, nil); err != nil {
		return err
	}
	fd, err := unix.Openat(int(dir.Fd()), name, dirFlags, 0)
	if err != nil {
		return err
	}
	sub := os.NewFile(uintptr(fd), filepath.Join(dir.Name(), name))
	defer sub.Close()
	names, err := sub.Readdirnames(-1)
	if err != nil {
		return err
	}
	for _, n := range names {
		if err := walkAt(sub, n, path.Join(rel, n), fn); err != nil {
			return err
		}
	}
	return nil
}

// destDir is an upload destination or a directory below it, held open.
type destDir struct{ f *os.File }

// openDest opens an upload's destination directory (a link as its last
// component is refused).
func openDest(p string) (*destDir, error) {
	f, err := openDir(p)
	if err != nil {
		return nil, err
	}
	return &destDir{f: f}, nil
}

func (d *destDir) Close() error { return d.f.Close() }
func (d *destDir) Name() string { return d.f.Name() }

// mkdirAll creates rel's directories below d and answers the last one;
// a link anywhere below d is refused (errLinkBelow), never followed.
func (d *destDir) mkdirAll(rel string) (*destDir, error) {
	cur := d.f
	parts := strings.Split(rel, "/")
	for _, c := range parts {
		if c == "" || c == "." {
			continue
		}
		if err := unix.Mkdirat(int(cur.Fd()), c, 0o755); err != nil && !errors.Is(err, unix.EEXIST) {
			if cur != d.f {
				cur.Close()
			}
			return nil, &fs.PathError{Op: "mkdir", Path: filepath.Join(cur.Name(), c), Err: err}
		}
		fd, err := openBeneath(cur, c, unix.O_RDONLY|unix.O_DIRECTORY, 0)
		name := filepath.Join(cur.Name(), c)
		if cur != d.f {
			cur.Close()
		}
		if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.EXDEV) || errors.Is(err, unix.ENOTDIR) {
			return nil, linkBelow(name)
		}
		if err != nil {
			return nil, &fs.PathError{Op: "open", Path: name, Err: err}
		}
		cur = os.NewFile(uintptr(fd), name)
	}
	if cur == d.f {
		fd, err := unix.Dup(int(d.f.Fd()))
		if err != nil {
			return nil, err
		}
		unix.CloseOnExec(fd)
		cur = os.NewFile(uintptr(fd), d.f.Name())
	}
	return &destDir{f: cur}, nil
}

func (d *destDir) lstat(name string) (fs.FileInfo, error) { return lstatAt(d.f, name) }

func (d *destDir) createTemp() (*os.File, string, error) { return createTempAt(d.f, ".cairn-upload-") }

func (d *destDir) rename(from, to string, replace bool) error {
	return renameAt(d.f, from, d.f, to, replace)
}

func (d *destDir) remove(name string) { _ = unix.Unlinkat(int(d.f.Fd()), name, 0) }

// readDirNoFollow lists directory p (a link as its last component is
// refused) from the descriptor that was checked.
func readDirNoFollow(p string) ([]fs.DirEntry, error) {
	f, err := openDir(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.ReadDir(-1)
}
