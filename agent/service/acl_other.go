//go:build !windows

package service

// SecureConfigDir: on Unix the directory is created 0700 by its creator,
// which is all it needs.
func SecureConfigDir(string) error { return nil }
