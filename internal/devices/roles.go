package devices

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/db"
)

const (
	maxRoles        = 64
	maxRoleText     = 64
	maxRoleError    = 2000
	maxRoleContext  = 32
	maxContextValue = 1024
)

var roleKeyPattern = regexp.MustCompile(`^system:[a-z0-9_]{1,64}$`)

// checkRoles validates role health rows; field is their JSON path.
func checkRoles(v *cairn.Validation, field string, roles []proto.RoleHealth) {
	if len(roles) > maxRoles {
		v.Add(field, fmt.Sprintf("must have at most %d entries", maxRoles))
		return
	}
	for i, r := range roles {
		f := fmt.Sprintf("%s[%d]", field, i)
		switch {
		case !roleKeyPattern.MatchString(r.Key):
			v.Add(f+".key", `must be "system:" and a role name of lower-case letters, digits and "_"`)
		case r.Key == proto.RoleKeyStartup:
			v.Add(f+".key", "is the startup timeline's row, which only the status post writes")
		}
		switch r.Observed {
		case proto.RoleHealthy, proto.RoleUnhealthy, proto.RoleRecovering, proto.RoleStopped:
		default:
			v.Add(f+".observed", "must be Healthy, Unhealthy, Recovering or Stopped")
		}
		if len(r.Desired) > maxRoleText {
			v.Add(f+".desired", fmt.Sprintf("must be at most %d characters", maxRoleText))
		}
		if len(r.LastError) > maxRoleError {
			v.Add(f+".last_error", fmt.Sprintf("must be at most %d characters", maxRoleError))
		}
		if r.RecoveryAttempts < 0 || r.RecoveryAttempts > math32 {
			v.Add(f+".recovery_attempts", "must be a non-negative 32-bit integer")
		}
		if len(r.Context) > maxRoleContext {
			v.Add(f+".context", fmt.Sprintf("must have at most %d entries", maxRoleContext))
		}
		for k, val := range r.Context {
			if len(k) > maxRoleText || len(val) > maxContextValue {
				v.Add(f+".context", fmt.Sprintf("keys must be at most %d and values %d characters", maxRoleText, maxContextValue))
				break
			}
		}
	}
}

const math32 = 1<<31 - 1

func timePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	u := t.UTC()
	return &u
}

// roleRows turns reported roles into upsert rows. last_checked_at falls
// back to the Engine's receipt time when the agent left it out.
func roleRows(guid cairn.DeviceGUID, roles []proto.RoleHealth, now time.Time) ([]db.DeviceRoleUpsertParams, error) {
	out := make([]db.DeviceRoleUpsertParams, 0, len(roles))
	for _, r := range roles {
		ctx := r.Context
		if ctx == nil {
			ctx = map[string]string{}
		}
		b, err := json.Marshal(ctx)
		if err != nil {
			return nil, err
		}
		checked := timePtr(r.LastCheckedAt)
		if checked == nil {
			checked = &now
		}
		var healthy *time.Time
		if r.LastHealthyAt != nil {
			healthy = timePtr(*r.LastHealthyAt)
		}
		out = append(out, db.DeviceRoleUpsertParams{
			DeviceGuid: guid, Key: r.Key, Desired: strings.TrimSpace(r.Desired), Observed: r.Observed,
			LastCheckedAt: checked, LastHealthyAt: healthy, LastError: r.LastError,
			RecoveryAttempts: int32(r.RecoveryAttempts), Context: b,
		})
	}
	return out, nil
}

// upsertRoles writes role rows in one batch (one round trip).
func upsertRoles(ctx context.Context, q *db.Queries, rows []db.DeviceRoleUpsertParams) error {
	if len(rows) == 0 {
		return nil
	}
	var first error
	q.DeviceRoleUpsert(ctx, rows).Exec(func(_ int, err error) {
		if err != nil && first == nil {
			first = err
		}
	})
	return first
}

// Role is one stored role health row.
type Role struct {
	Key              string
	Desired          string
	Observed         string
	LastCheckedAt    *time.Time
	LastHealthyAt    *time.Time
	LastError        string
	RecoveryAttempts int32
	// Context is a JSON object: string pairs for roles, the startup
	// timeline for the startup row.
	Context   json.RawMessage
	UpdatedAt time.Time
}

// Name is the role's name without the "system:" prefix.
func (r Role) Name() string { return strings.TrimPrefix(r.Key, "system:") }

// AgentHealth is the Agent Health view of a device's roles: the startup
// timeline, the roles the console merges into "Agent Connection" (API
// WebSocket and VPN tunnel, SPEC "Agent role health snapshot"), and every
// other role.
type AgentHealth struct {
	Startup         *Role
	AgentConnection []Role
	Roles           []Role
}

func groupRoles(rows []db.DeviceRole) AgentHealth {
	h := AgentHealth{AgentConnection: []Role{}, Roles: []Role{}}
	for _, r := range rows {
		role := Role{Key: r.Key, Desired: r.Desired, Observed: r.Observed, LastCheckedAt: r.LastCheckedAt,
			LastHealthyAt: r.LastHealthyAt, LastError: r.LastError, RecoveryAttempts: r.RecoveryAttempts,
			Context: r.Context, UpdatedAt: r.UpdatedAt}
		switch r.Key {
		case proto.RoleKeyStartup:
			h.Startup = &role
		case proto.RoleKeyAPIWebSocket, proto.RoleKeyVPNTunnel:
			h.AgentConnection = append(h.AgentConnection, role)
		default:
			h.Roles = append(h.Roles, role)
		}
	}
	return h
}

// ReportRole stores one role row an agent reports outside its status and
// details posts (the tunnel's ready call carries system:vpn_tunnel), under
// the same rules; field is the row's JSON path for validation errors.
func (s *Service) ReportRole(ctx context.Context, guid, field string, r proto.RoleHealth) error {
	if err := CheckRole(field, r); err != nil {
		return err
	}
	rows, err := roleRows(cairn.DeviceGUID(guid), []proto.RoleHealth{r}, time.Now())
	if err != nil {
		return err
	}
	return upsertRoles(ctx, s.store.Queries, rows)
}

// RoleOf is one stored role row of a device, or nil.
func (s *Service) RoleOf(ctx context.Context, guid, key string) (*Role, error) {
	rows, err := s.store.DeviceRoleList(ctx, cairn.DeviceGUID(guid))
	if err != nil {
		return nil, err
	}
	for _, r := range groupRoles(rows).AgentConnection {
		if r.Key == key {
			return &r, nil
		}
	}
	for _, r := range groupRoles(rows).Roles {
		if r.Key == key {
			return &r, nil
		}
	}
	return nil, nil
}

// CheckRole validates one role row as a status post would; field is its
// JSON path.
func CheckRole(field string, r proto.RoleHealth) error {
	var v cairn.Validation
	checkRoles(&v, field, []proto.RoleHealth{r})
	err := v.Err()
	var ce *cairn.Error
	if errors.As(err, &ce) {
		fields := map[string]string{}
		for k, p := range ce.Fields {
			fields[strings.Replace(k, field+"[0]", field, 1)] = p
		}
		ce.Fields = fields
	}
	return err
}
