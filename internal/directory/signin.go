package directory

import (
	"context"
	"errors"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/db"
	"github.com/cairn-rmm/cairn/internal/auth"
)

var (
	errInvalidCredentials = cairn.Errorf(cairn.ECodeInvalidCredentials, "the username or password is not correct")
	errDisabled           = cairn.Errorf(cairn.ECodeForbidden, "this directory account is disabled; ask an administrator")
	errNoRole             = cairn.Errorf(cairn.ECodeForbidden, "your directory groups give you no role here; ask an administrator")
)

// SignIn implements auth.Directory. A cached user signs in only through
// the provider that created it; an unknown username is looked up in every
// enabled provider, in order, and the first that has the user decides.
// The cached account is created or refreshed, and its role and site
// assignments are replaced by what the group mappings give today.
func (s *Service) SignIn(ctx context.Context, username, password string) (db.User, error) {
	if auth.UsernameProblem(username) != "" || password == "" {
		return db.User{}, errInvalidCredentials
	}
	providers, refusal, err := s.candidates(ctx, username)
	if err != nil {
		return db.User{}, err
	}
	for _, p := range providers {
		set, err := settingsOf(p)
		if err != nil {
			return db.User{}, err
		}
		bindPassword, err := s.bindPassword(p)
		if cairn.ErrorCode(err) == cairn.ECodeConflict {
			// Sealed by a master cipher that was since reset: for the user
			// signing in the directory is down until an administrator acts
			// (a conflict is theirs to resolve, not the user's).
			s.log.WarnContext(ctx, "directory sign-in: the provider's service-account password must be entered again", "provider", p.Name)
			return db.User{}, cairn.Errorf(cairn.ECodeUnavailable, "the directory %q cannot be used until an administrator enters its service-account password again", p.Name)
		}
		if err != nil {
			return db.User{}, err
		}
		entry, err := lookup(set, bindPassword, username)
		if errors.Is(err, errUserNotFound) {
			continue
		} else if err != nil {
			// The message may name the provider's host, never a password.
			s.log.WarnContext(ctx, "directory sign-in: provider failed", "provider", p.Name, "err", err)
			return db.User{}, cairn.Errorf(cairn.ECodeUnavailable, "the directory %q cannot be reached; try again later", p.Name)
		}
		ok, err := checkUserPassword(set, entry.DN, password)
		if err != nil {
			s.log.WarnContext(ctx, "directory sign-in: user bind failed", "provider", p.Name, "err", err)
			return db.User{}, cairn.Errorf(cairn.ECodeUnavailable, "the directory %q cannot be reached; try again later", p.Name)
		}
		if !ok {
			return db.User{}, errInvalidCredentials
		}
		if refusal != nil {
			return db.User{}, refusal
		}
		m := mapGroups(set, entry.Groups)
		if m.Role == "" {
			return db.User{}, errNoRole
		}
		return s.cache(ctx, p.ID, username, entry.DN, m)
	}
	return db.User{}, errInvalidCredentials
}

// candidates are the providers to ask about username, and the refusal a
// cached account earns once its password is right (a disabled account or
// provider): answering it before the password check would tell anyone
// which accounts exist.
func (s *Service) candidates(ctx context.Context, username string) ([]db.DirectoryProvider, error, error) {
	u, err := s.store.UserGetByUsername(ctx, username)
	switch {
	case db.IsNoRows(err):
		providers, err := s.store.DirectoryProviderListEnabled(ctx)
		return providers, nil, err
	case err != nil:
		return nil, nil, err
	case u.AuthSource != "directory":
		return nil, nil, errInvalidCredentials
	}
	r, err := s.store.DirectoryProviderGet(ctx, *u.DirectoryProviderID)
	if err != nil {
		return nil, nil, err
	}
	var refusal error
	switch {
	case u.DirectoryDisabled:
		refusal = errDisabled
	case !r.DirectoryProvider.Enabled:
		refusal = cairn.Errorf(cairn.ECodeForbidden, "the directory %q that manages this account is disabled", r.DirectoryProvider.Name)
	}
	return []db.DirectoryProvider{r.DirectoryProvider}, refusal, nil
}

func lookup(set Settings, bindPassword, username string) (userEntry, error) {
	c, err := connect(set, bindPassword)
	if err != nil {
		return userEntry{}, err
	}
	defer c.Close()
	return findUser(c, set, username)
}

func (s *Service) cache(ctx context.Context, providerID int64, username, dn string, m Mapped) (db.User, error) {
	var u db.User
	err := s.store.InTx(ctx, func(q *db.Queries) error {
		var err error
		u, err = q.DirectoryUserUpsert(ctx, db.DirectoryUserUpsertParams{Username: username, Role: m.Role, ProviderID: &providerID, Dn: dn})
		if db.IsNoRows(err) {
			// A local account of that name appeared meanwhile.
			return errInvalidCredentials
		} else if err != nil {
			return err
		}
		if u.DirectoryDisabled {
			return errDisabled
		}
		if err := q.DirectoryUserSiteClear(ctx, u.ID); err != nil {
			return err
		}
		return q.DirectoryUserSiteAssign(ctx, db.DirectoryUserSiteAssignParams{UserID: u.ID, SiteIds: orNoSites(m.SiteIDs)})
	})
	return u, err
}

func orNoSites(ids []int64) []int64 {
	if ids == nil {
		return []int64{}
	}
	return ids
}

// LookupResult is the diagnostics of a username lookup.
type LookupResult struct {
	Found      bool
	DN         string
	Attributes map[string][]string
	Groups     []string
	Mapped
	// PasswordOK is set when a password was given.
	PasswordOK *bool
}

// Lookup finds a user as sign-in would (also on a disabled provider, so a
// provider can be checked before it is enabled) and reports what the
// mappings give; with a password it also tries the user's bind.
func (s *Service) Lookup(ctx context.Context, id int64, username string, password *string) (LookupResult, error) {
	if username == "" {
		return LookupResult{}, cairn.Invalid("username", "is required")
	}
	_, set, bindPassword, err := s.load(ctx, id)
	if err != nil {
		return LookupResult{}, err
	}
	entry, err := lookup(set, bindPassword, username)
	if errors.Is(err, errUserNotFound) {
		return LookupResult{}, nil
	} else if err != nil {
		return LookupResult{}, cairn.Errorf(cairn.ECodeUnavailable, "lookup failed: %v", err)
	}
	res := LookupResult{Found: true, DN: entry.DN, Attributes: entry.Attributes, Groups: entry.Groups, Mapped: mapGroups(set, entry.Groups)}
	if password != nil {
		ok, err := checkUserPassword(set, entry.DN, *password)
		if err != nil {
			return LookupResult{}, cairn.Errorf(cairn.ECodeUnavailable, "password check failed: %v", err)
		}
		res.PasswordOK = &ok
	}
	return res, nil
}

// SyncResult is what a sync did.
type SyncResult struct {
	Checked  int
	Disabled []string
}

// Sync looks up every cached user of the provider and disables (and signs
// out) those the directory no longer has. A provider that cannot be
// reached disables nobody.
func (s *Service) Sync(ctx context.Context, id int64) (SyncResult, error) {
	_, set, bindPassword, err := s.load(ctx, id)
	if err != nil {
		return SyncResult{}, err
	}
	users, err := s.store.DirectoryUserListByProvider(ctx, &id)
	if err != nil {
		return SyncResult{}, err
	}
	res := SyncResult{Disabled: []string{}}
	if len(users) == 0 {
		return res, nil
	}
	c, err := connect(set, bindPassword)
	if err != nil {
		return SyncResult{}, cairn.Errorf(cairn.ECodeUnavailable, "sync failed: %v", err)
	}
	defer c.Close()
	var gone []string
	for _, u := range users {
		res.Checked++
		_, err := findUser(c, set, u.Username)
		if errors.Is(err, errUserNotFound) {
			if !u.DirectoryDisabled {
				gone = append(gone, u.Username)
			}
		} else if err != nil {
			return SyncResult{}, cairn.Errorf(cairn.ECodeUnavailable, "sync failed at %s: %v", u.Username, err)
		}
	}
	for _, name := range gone {
		if err := s.setDisabled(ctx, name, true); err != nil {
			return SyncResult{}, err
		}
		res.Disabled = append(res.Disabled, name)
	}
	return res, nil
}

// SetCacheEnabled enables or disables a cached directory user; disabling
// ends the user's sessions.
func (s *Service) SetCacheEnabled(ctx context.Context, username string, enabled bool) error {
	return s.setDisabled(ctx, auth.NormalizeUsername(username), !enabled)
}

func (s *Service) setDisabled(ctx context.Context, username string, disabled bool) error {
	return s.store.InTx(ctx, func(q *db.Queries) error {
		id, err := q.DirectoryUserSetDisabled(ctx, db.DirectoryUserSetDisabledParams{Disabled: disabled, Username: username})
		if err != nil {
			return db.NotFound(err, "no cached directory user %q", username)
		}
		if !disabled {
			return nil
		}
		return q.SessionDeleteByUser(ctx, id)
	})
}
