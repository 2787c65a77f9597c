package db

import (
	"github.com/pressly/goose/v3/lock"
)

// migrationLockID is the advisory-lock key that serializes migrations.
const migrationLockID = 0x636169726e // "cairn"

func newLocker() (lock.SessionLocker, error) {
	return lock.NewPostgresSessionLocker(lock.WithLockID(migrationLockID))
}
