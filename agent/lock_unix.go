//go:build unix

package agent

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// lock takes an exclusive flock on path (created 0600 if missing) and
// returns the release function. flock is tied to the open file, so a
// crashed holder releases it automatically.
func lock(path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open lock file: %w", err)
	}
	for {
		err = unix.Flock(int(f.Fd()), unix.LOCK_EX)
		if err != unix.EINTR {
			break
		}
	}
	if err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return func() {
		_ = unix.Flock(int(f.Fd()), unix.LOCK_UN)
		_ = f.Close()
	}, nil
}

// syncDir makes the rename durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// replaceFile renames tmp over path; POSIX rename is atomic even while
// readers hold the old file open.
func replaceFile(tmp, path string) error { return os.Rename(tmp, path) }

// readFile reads the config file; POSIX lets a rename replace it while it
// is open.
func readFile(path string) ([]byte, error) { return os.ReadFile(path) }
