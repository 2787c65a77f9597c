package devices

import (
	"context"
	"fmt"
	"strings"
	"unicode"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/db"
)

// Bounds of operator input.
const (
	MaxHostname     = 255
	MaxGUID         = 128
	MaxDescription  = 500
	MaxSearchResult = 100
	// DefaultSearchResult is the search page when the caller names none.
	DefaultSearchResult = 25
)

// Every lookup below filters by the caller's scope in SQL; a device
// outside it is "not found" with the same message as a missing one, and
// the message never repeats the name asked for (it would echo input into
// an answer that must look the same either way).
func notFound(err error) error { return db.NotFound(err, "device not found") }

// CheckHostname validates a hostname path or query value.
func CheckHostname(field, hostname string) error {
	switch {
	case strings.TrimSpace(hostname) == "":
		return cairn.Invalid(field, "is required")
	case len(hostname) > MaxHostname:
		return cairn.Invalid(field, fmt.Sprintf("must be at most %d characters", MaxHostname))
	case strings.ContainsFunc(hostname, unicode.IsControl):
		return cairn.Invalid(field, "must not contain control characters")
	}
	return nil
}

// ListFilter narrows List: a site and a connection status (canonical, see
// ParseStatus); zero values do not filter.
type ListFilter struct {
	SiteID cairn.SiteID
	Status string
}

// List returns the devices inside scope, by hostname.
func (s *Service) List(ctx context.Context, scope cairn.SiteScope, f ListFilter) ([]Device, error) {
	p := db.DeviceListInScopeParams{AllSites: scope.All, SiteIds: scope.IDs()}
	if f.SiteID != 0 {
		p.SiteID = (*int64)(&f.SiteID)
	}
	return s.list(ctx, p, f.Status)
}

// Online returns the devices inside scope heard from within the online
// window (the online collectors).
func (s *Service) Online(ctx context.Context, scope cairn.SiteScope) ([]Device, error) {
	since := s.now().Add(-s.cfg.OnlineWindow)
	return s.list(ctx, db.DeviceListInScopeParams{AllSites: scope.All, SiteIds: scope.IDs(), OnlineSince: &since}, "")
}

func (s *Service) list(ctx context.Context, p db.DeviceListInScopeParams, status string) ([]Device, error) {
	rows, err := s.store.DeviceListInScope(ctx, p)
	if err != nil {
		return nil, err
	}
	now := s.now()
	out := make([]Device, 0, len(rows))
	for _, r := range rows {
		// Status is derived with the Go rule in one place rather than
		// repeated in SQL; the list is one site's or scope's devices.
		d := s.device(r.Device, r.SiteName, r.SiteSlug, now)
		if status == "" || d.Connectivity == status {
			out = append(out, d)
		}
	}
	return out, nil
}

// Search finds devices inside scope whose hostname contains query, case
// insensitively, exact and prefix matches first; at most limit of them,
// and truncated says more matched.
func (s *Service) Search(ctx context.Context, scope cairn.SiteScope, query string, limit int) (found []Device, truncated bool, err error) {
	if err := CheckHostname("hostname", query); err != nil {
		return nil, false, err
	}
	if limit <= 0 || limit > MaxSearchResult {
		limit = DefaultSearchResult
	}
	rows, err := s.store.DeviceSearchInScope(ctx, db.DeviceSearchInScopeParams{AllSites: scope.All, SiteIds: scope.IDs(),
		Query: strings.TrimSpace(query), MaxRows: int32(limit + 1)})
	if err != nil {
		return nil, false, err
	}
	now := s.now()
	for i, r := range rows {
		if i == limit {
			return found, true, nil
		}
		found = append(found, s.device(r.Device, r.SiteName, r.SiteSlug, now))
	}
	if found == nil {
		found = []Device{}
	}
	return found, false, nil
}

// Get returns one device inside scope by GUID.
func (s *Service) Get(ctx context.Context, scope cairn.SiteScope, guid cairn.DeviceGUID) (Device, error) {
	if guid == "" || len(guid) > MaxGUID {
		return Device{}, cairn.Invalid("guid", fmt.Sprintf("must be 1 to %d characters", MaxGUID))
	}
	r, err := s.store.DeviceGetInScope(ctx, db.DeviceGetInScopeParams{Guid: guid, AllSites: scope.All, SiteIds: scope.IDs()})
	if err != nil {
		return Device{}, notFound(err)
	}
	return s.device(r.Device, r.SiteName, r.SiteSlug, s.now()), nil
}

// ByHostname returns one device inside scope by hostname (any case).
func (s *Service) ByHostname(ctx context.Context, scope cairn.SiteScope, hostname string) (Device, error) {
	r, err := s.hostRow(ctx, scope, hostname)
	if err != nil {
		return Device{}, err
	}
	return s.device(r.Device, r.SiteName, r.SiteSlug, s.now()), nil
}

func (s *Service) hostRow(ctx context.Context, scope cairn.SiteScope, hostname string) (db.DeviceGetByHostnameInScopeRow, error) {
	if err := CheckHostname("hostname", hostname); err != nil {
		return db.DeviceGetByHostnameInScopeRow{}, err
	}
	r, err := s.store.DeviceGetByHostnameInScope(ctx, db.DeviceGetByHostnameInScopeParams{Hostname: hostname, AllSites: scope.All, SiteIds: scope.IDs()})
	return r, notFound(err)
}

// SetDescription sets the operator description of a device inside scope:
// trimmed, at most MaxDescription characters, no control characters; an
// empty one clears it.
func (s *Service) SetDescription(ctx context.Context, scope cairn.SiteScope, hostname, description string) (Device, error) {
	if err := CheckHostname("hostname", hostname); err != nil {
		return Device{}, err
	}
	description = strings.TrimSpace(description)
	switch {
	case len([]rune(description)) > MaxDescription:
		return Device{}, cairn.Invalid("description", fmt.Sprintf("must be at most %d characters", MaxDescription))
	case strings.ContainsFunc(description, unicode.IsControl):
		return Device{}, cairn.Invalid("description", "must be one line without control characters")
	}
	if _, err := s.store.DeviceDescriptionSet(ctx, db.DeviceDescriptionSetParams{Description: description, Hostname: hostname,
		AllSites: scope.All, SiteIds: scope.IDs()}); err != nil {
		return Device{}, notFound(err)
	}
	return s.ByHostname(ctx, scope, hostname)
}
