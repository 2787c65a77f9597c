//go:build !linux

package main

// trimExecutable does nothing here: the executable's pages are left to
// the system (Windows trims idle working sets itself).
func trimExecutable() error { return nil }
