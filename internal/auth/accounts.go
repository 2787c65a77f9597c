package auth

import (
	"context"
	"slices"
	"time"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/db"
)

// AccountEntry is an account as administrators list it.
type AccountEntry struct {
	Account
	SiteIDs     []int64
	LastLoginAt *time.Time
}

// ListAccounts returns every operator account with its site assignments.
func (s *Service) ListAccounts(ctx context.Context) ([]AccountEntry, error) {
	rows, err := s.store.UserList(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]AccountEntry, len(rows))
	for i, r := range rows {
		out[i] = AccountEntry{
			Account: Account{Username: r.Username, Role: r.Role, AuthSource: r.AuthSource, MFAEnabled: r.MfaRequired,
				MFAConfigured: r.MfaConfirmed, RecoveryRequired: r.RecoveryRequired, CreatedAt: r.CreatedAt},
			SiteIDs: r.SiteIds, LastLoginAt: r.LastLoginAt,
		}
	}
	return out, nil
}

// Account returns one account by username.
func (s *Service) Account(ctx context.Context, username string) (AccountEntry, error) {
	u, err := s.userByName(ctx, s.store.Queries, username)
	if err != nil {
		return AccountEntry{}, err
	}
	ids, err := s.store.UserSiteIDs(ctx, u.ID)
	if err != nil {
		return AccountEntry{}, err
	}
	return AccountEntry{Account: accountOf(u), SiteIDs: cairn.SiteIDInts(ids), LastLoginAt: u.LastLoginAt}, nil
}

// DeleteAccount removes an account and its sessions; the last active
// administrator cannot be removed.
func (s *Service) DeleteAccount(ctx context.Context, username string) error {
	return s.store.InTx(ctx, func(q *db.Queries) error {
		u, err := s.userByName(ctx, q, username)
		if err != nil {
			return err
		}
		if err := s.keepAnAdmin(ctx, q, u); err != nil {
			return err
		}
		return q.UserDelete(ctx, u.ID) // sessions and assignments cascade
	})
}

// SetRole changes an account's role and ends its sessions so the new role
// applies at once; the last active administrator cannot be demoted.
func (s *Service) SetRole(ctx context.Context, username, role string) (AccountEntry, error) {
	if role != RoleAdmin && role != RoleOperator {
		return AccountEntry{}, cairn.Invalid("role", "must be admin or operator")
	}
	err := s.store.InTx(ctx, func(q *db.Queries) error {
		u, err := s.userByName(ctx, q, username)
		if err != nil {
			return err
		}
		if u.AuthSource != "local" {
			// Group mappings set a directory account's role at every sign-in.
			return cairn.Errorf(cairn.ECodeForbidden, "a directory account's role comes from its directory groups")
		}
		if u.Role == role {
			return nil
		}
		if role != RoleAdmin {
			if err := s.keepAnAdmin(ctx, q, u); err != nil {
				return err
			}
		}
		if err := q.UserSetRole(ctx, db.UserSetRoleParams{ID: u.ID, Role: role}); err != nil {
			return err
		}
		return q.SessionDeleteByUser(ctx, u.ID)
	})
	if err != nil {
		return AccountEntry{}, err
	}
	return s.Account(ctx, username)
}

// ResetPassword sets a local account's password (an administrator's
// action), ends its sessions and revokes its API tokens, returning how
// many.
func (s *Service) ResetPassword(ctx context.Context, username, password string) (revoked int64, err error) {
	if err := CheckPassword("password", password); err != nil {
		return 0, err
	}
	u, err := s.userByName(ctx, s.store.Queries, username)
	if err != nil {
		return 0, err
	}
	if u.AuthSource != "local" {
		return 0, cairn.Errorf(cairn.ECodeForbidden, "directory accounts get their password from the directory")
	}
	sealed, err := s.sealPassword(u.Username, password)
	if err != nil {
		return 0, err
	}
	err = s.store.InTx(ctx, func(q *db.Queries) error {
		if err := q.UserSetPassword(ctx, db.UserSetPasswordParams{ID: u.ID, PasswordSealed: sealed}); err != nil {
			return err
		}
		if err := q.SessionDeleteByUser(ctx, u.ID); err != nil {
			return err
		}
		revoked, err = q.APITokenDeleteByUser(ctx, u.ID)
		return err
	})
	return revoked, err
}

// MFA actions an administrator can take on an account.
const (
	MFAEnable  = "enable"
	MFADisable = "disable"
	MFAReset   = "reset"
)

// SetMFA requires MFA (enable), lets the operator sign in with the password
// alone (disable, admins only by route), or clears the authenticator so a
// new one is set up at the next sign-in (reset).
func (s *Service) SetMFA(ctx context.Context, username, action string) (_ AccountEntry, revoked int64, err error) {
	u, err := s.userByName(ctx, s.store.Queries, username)
	if err != nil {
		return AccountEntry{}, 0, err
	}
	switch action {
	case MFAEnable, MFADisable:
		err = s.store.UserSetMFARequired(ctx, db.UserSetMFARequiredParams{ID: u.ID, MfaRequired: action == MFAEnable})
	case MFAReset:
		// The sessions and API tokens made while the old authenticator
		// was trusted end with it.
		err = s.store.InTx(ctx, func(q *db.Queries) error {
			if err := q.UserClearTOTP(ctx, u.ID); err != nil {
				return err
			}
			if err := q.SessionDeleteByUser(ctx, u.ID); err != nil {
				return err
			}
			revoked, err = q.APITokenDeleteByUser(ctx, u.ID)
			return err
		})
	default:
		return AccountEntry{}, 0, cairn.Invalid("action", "must be enable, disable or reset")
	}
	if err != nil {
		return AccountEntry{}, 0, err
	}
	a, err := s.Account(ctx, username)
	return a, revoked, err
}

// SiteAssignments returns the assigned site IDs of each named account.
func (s *Service) SiteAssignments(ctx context.Context, usernames []string) (map[string][]int64, error) {
	users, err := s.usersByName(ctx, s.store.Queries, usernames)
	if err != nil {
		return nil, err
	}
	out := make(map[string][]int64, len(users))
	for _, u := range users {
		out[u.Username] = []int64{}
	}
	rows, err := s.store.UserSiteAssignmentsByUsers(ctx, names(users))
	if err != nil {
		return nil, err
	}
	for _, r := range rows {
		out[r.Username] = append(out[r.Username], int64(r.SiteID))
	}
	return out, nil
}

// AssignSites replaces the site assignments of the named accounts, all or
// nothing.
func (s *Service) AssignSites(ctx context.Context, usernames []string, siteIDs []int64) (map[string][]int64, error) {
	siteIDs = uniqueIDs(siteIDs)
	for _, id := range siteIDs {
		if id <= 0 {
			return nil, cairn.Invalid("site_ids", "must be positive site IDs")
		}
	}
	err := s.store.InTx(ctx, func(q *db.Queries) error {
		users, err := s.usersByName(ctx, q, usernames)
		if err != nil {
			return err
		}
		n, err := q.SiteCountByIDs(ctx, siteIDs)
		if err != nil {
			return err
		}
		if int(n) != len(siteIDs) {
			return cairn.Errorf(cairn.ECodeNotFound, "one or more sites do not exist")
		}
		ids := make([]int64, len(users))
		for i, u := range users {
			ids[i] = u.ID
		}
		if err := q.UserSiteAssignmentDeleteByUsers(ctx, ids); err != nil {
			return err
		}
		return q.UserSiteAssignmentInsertMany(ctx, db.UserSiteAssignmentInsertManyParams{UserIds: ids, SiteIds: siteIDs})
	})
	if err != nil {
		return nil, err
	}
	return s.SiteAssignments(ctx, usernames)
}

// keepAnAdmin refuses to remove u from the administrators when it is the
// last active one. It locks the active administrators for the transaction.
func (s *Service) keepAnAdmin(ctx context.Context, q *db.Queries, u db.User) error {
	if u.Role != RoleAdmin {
		return nil
	}
	admins, err := q.UserActiveAdminIDsForUpdate(ctx)
	if err != nil {
		return err
	}
	if slices.Contains(admins, u.ID) && len(admins) == 1 {
		return cairn.Errorf(cairn.ECodeLastAdmin, "%s is the last active administrator; make another administrator first", u.Username)
	}
	return nil
}

func (s *Service) userByName(ctx context.Context, q *db.Queries, username string) (db.User, error) {
	u, err := q.UserGetByUsername(ctx, NormalizeUsername(username))
	return u, db.NotFound(err, "no operator named %q", NormalizeUsername(username))
}

// usersByName resolves every username or fails with not_found naming the
// missing ones.
func (s *Service) usersByName(ctx context.Context, q *db.Queries, usernames []string) ([]db.User, error) {
	if len(usernames) == 0 {
		return nil, cairn.Invalid("usernames", "must name at least one operator")
	}
	want := make([]string, 0, len(usernames))
	for _, u := range usernames {
		want = append(want, NormalizeUsername(u))
	}
	slices.Sort(want)
	want = slices.Compact(want)
	users, err := q.UserGetManyByUsername(ctx, want)
	if err != nil {
		return nil, err
	}
	if len(users) != len(want) {
		return nil, cairn.Errorf(cairn.ECodeNotFound, "one or more operators do not exist")
	}
	return users, nil
}

func names(users []db.User) []string {
	out := make([]string, len(users))
	for i, u := range users {
		out[i] = u.Username
	}
	return out
}

func uniqueIDs(ids []int64) []int64 {
	out := slices.Clone(ids)
	slices.Sort(out)
	return slices.Compact(out)
}
