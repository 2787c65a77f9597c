//go:build !windows

package inventory

import (
	"context"
	"errors"
	"io/fs"
	"slices"

	"github.com/shirou/gopsutil/v4/host"
)

// loggedInUsers are the distinct names in utmp, sorted (gopsutil asks
// loginctl where utmp does not exist). No utmp at all means nobody logged
// in through it.
func loggedInUsers(ctx context.Context) ([]string, error) {
	users, err := host.UsersWithContext(ctx)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	out := []string{}
	for _, u := range users {
		if u.User != "" && !slices.Contains(out, u.User) {
			out = append(out, u.User)
		}
	}
	slices.Sort(out)
	return out, nil
}
