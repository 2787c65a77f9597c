//go:build linux || windows

package inventory

import (
	"context"
	"slices"

	"github.com/cairn-rmm/cairn/agent/proto"
)

// SignedInUsers are the distinct users with a session on this machine,
// sorted: on Linux logind's user sessions (loginctl list-sessions) merged
// with utmp, on Windows the WTS sessions; the same sessions the inventory
// reports. A patch reboot is skipped while it lists anyone.
func SignedInUsers(ctx context.Context) ([]string, error) {
	var inv proto.Inventory
	if err := collectSessions(ctx, nil, &inv); err != nil {
		return nil, err
	}
	var users []string
	for _, s := range inv.Sessions {
		if s.Username != "" && !slices.Contains(users, s.Username) {
			users = append(users, s.Username)
		}
	}
	slices.Sort(users)
	return users, nil
}
