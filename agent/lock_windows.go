//go:build windows

package agent

import (
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"golang.org/x/sys/windows"
)

// lock takes an exclusive LockFileEx lock on path (created if missing) and
// returns the release function. Windows drops the lock when the handle
// closes, including when the holder crashes.
func lock(path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open lock file: %w", err)
	}
	h := windows.Handle(f.Fd())
	ol := new(windows.Overlapped)
	if err := windows.LockFileEx(h, windows.LOCKFILE_EXCLUSIVE_LOCK, 0, 1, 0, ol); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return func() {
		_ = windows.UnlockFileEx(h, 0, 1, 0, ol)
		_ = f.Close()
	}, nil
}

// syncDir is a no-op: Windows cannot open a directory for flushing, and
// MoveFileEx (os.Rename) already replaces the file as one NTFS operation.
func syncDir(string) error { return nil }

// replaceFile renames tmp over path. Go opens files on Windows without
// FILE_SHARE_DELETE, so a lock-free reader (status, a heartbeat's Load)
// holding agent.json open makes the replace fail briefly.
func replaceFile(tmp, path string) error {
	return whileHeld(func() error { return os.Rename(tmp, path) })
}

// readFile reads the config file. It opens with FILE_SHARE_DELETE (os.Open
// does not), so a writer's replace can go ahead while it reads; the file can
// still be held without sharing for a moment: a replace, or a virus scanner
// or indexer that opened it.
func readFile(path string) ([]byte, error) {
	p, err := windows.UTF16PtrFromString(path)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	var h windows.Handle
	err = whileHeld(func() (err error) {
		h, err = windows.CreateFile(p, windows.GENERIC_READ,
			windows.FILE_SHARE_READ|windows.FILE_SHARE_WRITE|windows.FILE_SHARE_DELETE,
			nil, windows.OPEN_EXISTING, windows.FILE_ATTRIBUTE_NORMAL, 0)
		return err
	})
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	f := os.NewFile(uintptr(h), path)
	defer f.Close()
	return io.ReadAll(f)
}

// whileHeld runs op until it succeeds, fails for another reason than the
// file being held open without sharing (which Windows reports as a sharing
// violation, or as access denied for a file pending replacement), or about
// two seconds have passed.
func whileHeld(op func() error) error {
	var err error
	for i := range 40 {
		if i > 0 {
			time.Sleep(50 * time.Millisecond)
		}
		err = op()
		if err == nil || !(errors.Is(err, windows.ERROR_SHARING_VIOLATION) || errors.Is(err, windows.ERROR_ACCESS_DENIED)) {
			return err
		}
	}
	return err
}
