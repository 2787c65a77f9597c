package main

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// trimExecutable tells the kernel to reclaim this process's pages of its
// own executable (MADV_PAGEOUT, Linux 5.4 and later): they leave the
// process's resident set, stay in the page cache, and the ones still in
// use come back at their next touch.
func trimExecutable() error {
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		return err
	}
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		return err
	}
	defer f.Close()
	var firstErr error
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// start-end perms offset dev inode path
		fields := strings.Fields(sc.Text())
		if len(fields) < 6 || fields[5] != exe {
			continue
		}
		lo, hi, ok := strings.Cut(fields[0], "-")
		if !ok {
			continue
		}
		start, err1 := strconv.ParseUint(lo, 16, 64)
		end, err2 := strconv.ParseUint(hi, 16, 64)
		if err1 != nil || err2 != nil || end <= start {
			continue
		}
		// Only file-backed pages that were never written (text, read-only
		// data): MADV_PAGEOUT would swap out a written private page,
		// and there is no swap to take it.
		if strings.Contains(fields[1], "w") {
			continue
		}
		// The raw call: the range is the kernel's, not a Go slice.
		if _, _, errno := unix.Syscall(unix.SYS_MADVISE, uintptr(start), uintptr(end-start), unix.MADV_PAGEOUT); errno != 0 && firstErr == nil {
			firstErr = fmt.Errorf("madvise %s: %w", fields[0], errno)
		}
	}
	if err := sc.Err(); err != nil && firstErr == nil {
		firstErr = err
	}
	return firstErr
}
