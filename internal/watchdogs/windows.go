package watchdogs

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/db"
)

// WindowInput is a maintenance window to save: a weekly period (weekdays
// 0 = Sunday to 6, a start minute of the day and a duration, in a time
// zone) during which the notifications of one site's, one device's or
// one watchdog's incidents are held back. Evaluation goes on; incidents
// open and resolve as ever.
type WindowInput struct {
	Name            string
	SiteID          *int64
	DeviceGUID      *string
	WatchdogID      *int64
	Weekdays        []int
	StartMinute     int
	DurationMinutes int
	TimeZone        string
}

// Window is a saved maintenance window.
type Window struct {
	ID              int64
	Name            string
	SiteID          *int64
	DeviceGUID      *string
	WatchdogID      *int64
	Weekdays        []int
	StartMinute     int
	DurationMinutes int
	TimeZone        string
	CreatedBy       string
	CreatedAt       time.Time
}

// MaxWindowMinutes is a window's longest duration (a week).
const MaxWindowMinutes = 7 * 24 * 60

func windowFrom(r db.MaintenanceWindow) Window {
	w := Window{ID: r.ID, Name: r.Name, WatchdogID: r.WatchdogID, StartMinute: int(r.StartMinute),
		DurationMinutes: int(r.DurationMinutes), TimeZone: r.TimeZone, CreatedBy: r.CreatedBy, CreatedAt: r.CreatedAt}
	if r.SiteID != nil {
		id := int64(*r.SiteID)
		w.SiteID = &id
	}
	if r.DeviceGuid != nil {
		g := string(*r.DeviceGuid)
		w.DeviceGUID = &g
	}
	for _, d := range r.Weekdays {
		w.Weekdays = append(w.Weekdays, int(d))
	}
	return w
}

func (in WindowInput) check() (WindowInput, *time.Location, error) {
	var v cairn.Validation
	in.Name = strings.TrimSpace(in.Name)
	switch {
	case in.Name == "":
		v.Add("name", "is required")
	case len(in.Name) > MaxName || hasControl(in.Name):
		v.Add("name", fmt.Sprintf("must be at most %d characters without control characters", MaxName))
	}
	n := 0
	for _, set := range []bool{in.SiteID != nil, in.DeviceGUID != nil, in.WatchdogID != nil} {
		if set {
			n++
		}
	}
	if n != 1 {
		v.Add("site_id", "exactly one of site_id, guid and watchdog_id names what the window covers")
	}
	switch {
	case len(in.Weekdays) == 0:
		v.Add("weekdays", "must name at least one day (0 = Sunday to 6)")
	case slices.ContainsFunc(in.Weekdays, func(d int) bool { return d < 0 || d > 6 }):
		v.Add("weekdays", "must be days 0 (Sunday) to 6")
	}
	in.Weekdays = slices.Compact(slices.Sorted(slices.Values(in.Weekdays)))
	if in.StartMinute < 0 || in.StartMinute > 1439 {
		v.Add("start_minute", "must be 0 to 1439 (minutes after midnight)")
	}
	if in.DurationMinutes < 1 || in.DurationMinutes > MaxWindowMinutes {
		v.Add("duration_minutes", fmt.Sprintf("must be 1 to %d", MaxWindowMinutes))
	}
	if in.TimeZone == "" {
		in.TimeZone = "UTC"
	}
	loc, err := time.LoadLocation(in.TimeZone)
	if err != nil || len(in.TimeZone) > 64 {
		v.Add("time_zone", "must be an IANA time zone (e.g. Europe/Paris)")
	}
	return in, loc, v.Err()
}

// SaveWindow creates (id 0) or updates a maintenance window.
func (s *Service) SaveWindow(ctx context.Context, actor string, id int64, in WindowInput) (Window, error) {
	in, _, err := in.check()
	if err != nil {
		return Window{}, err
	}
	if in.SiteID != nil {
		if err := s.checkSites(ctx, "site_id", []int64{*in.SiteID}); err != nil {
			return Window{}, err
		}
	}
	var site *cairn.SiteID
	var guid *cairn.DeviceGUID
	if in.SiteID != nil {
		v := cairn.SiteID(*in.SiteID)
		site = &v
	}
	if in.DeviceGUID != nil {
		if _, err := s.store.DeviceGetByGUID(ctx, cairn.DeviceGUID(*in.DeviceGUID)); err != nil {
			if db.IsNoRows(err) {
				return Window{}, cairn.Invalid("guid", "names no device")
			}
			return Window{}, err
		}
		v := cairn.DeviceGUID(*in.DeviceGUID)
		guid = &v
	}
	if in.WatchdogID != nil {
		if _, err := s.store.WatchdogGet(ctx, *in.WatchdogID); err != nil {
			if db.IsNoRows(err) {
				return Window{}, cairn.Invalid("watchdog_id", "names no watchdog")
			}
			return Window{}, err
		}
	}
	days := make([]int32, len(in.Weekdays))
	for i, d := range in.Weekdays {
		days[i] = int32(d)
	}
	var r db.MaintenanceWindow
	if id == 0 {
		r, err = s.store.MaintenanceWindowInsert(ctx, db.MaintenanceWindowInsertParams{Name: in.Name, SiteID: site, DeviceGuid: guid,
			WatchdogID: in.WatchdogID, Weekdays: days, StartMinute: int32(in.StartMinute), DurationMinutes: int32(in.DurationMinutes),
			TimeZone: in.TimeZone, Actor: actor})
	} else {
		r, err = s.store.MaintenanceWindowUpdate(ctx, db.MaintenanceWindowUpdateParams{ID: id, Name: in.Name, SiteID: site, DeviceGuid: guid,
			WatchdogID: in.WatchdogID, Weekdays: days, StartMinute: int32(in.StartMinute), DurationMinutes: int32(in.DurationMinutes),
			TimeZone: in.TimeZone})
		err = db.NotFound(err, "maintenance window not found")
	}
	if err != nil {
		return Window{}, err
	}
	return windowFrom(r), nil
}

// ListWindows is every maintenance window.
func (s *Service) ListWindows(ctx context.Context) ([]Window, error) {
	rows, err := s.store.MaintenanceWindowList(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]Window, 0, len(rows))
	for _, r := range rows {
		out = append(out, windowFrom(r))
	}
	return out, nil
}

// DeleteWindow removes a maintenance window.
func (s *Service) DeleteWindow(ctx context.Context, id int64) error {
	n, err := s.store.MaintenanceWindowDelete(ctx, id)
	if err != nil {
		return err
	}
	if n == 0 {
		return cairn.Errorf(cairn.ECodeNotFound, "maintenance window not found")
	}
	return nil
}

// ActiveUntil says whether the window covers now and, if so, until when.
// A period that began on an earlier day (up to a week back) and still
// runs counts.
func (w Window) ActiveUntil(now time.Time) (time.Time, bool) {
	loc, err := time.LoadLocation(w.TimeZone)
	if err != nil {
		loc = time.UTC
	}
	local := now.In(loc)
	var until time.Time
	for back := 0; back <= 7; back++ {
		day := local.AddDate(0, 0, -back)
		if !slices.Contains(w.Weekdays, int(day.Weekday())) {
			continue
		}
		start := time.Date(day.Year(), day.Month(), day.Day(), 0, 0, 0, 0, loc).Add(time.Duration(w.StartMinute) * time.Minute)
		end := start.Add(time.Duration(w.DurationMinutes) * time.Minute)
		if !now.Before(start) && now.Before(end) && end.After(until) {
			until = end
		}
	}
	return until, !until.IsZero()
}

// mutedUntil is when the last maintenance window covering the incident
// now ends (zero: none covers it).
func (s *Service) mutedUntil(ctx context.Context, inc db.WatchdogIncident, now time.Time) (time.Time, error) {
	site := inc.SiteID
	wid := inc.WatchdogID
	rows, err := s.store.MaintenanceWindowsFor(ctx, db.MaintenanceWindowsForParams{SiteID: &site, DeviceGuid: string(inc.DeviceGuid), WatchdogID: &wid})
	if err != nil {
		return time.Time{}, err
	}
	var until time.Time
	for _, r := range rows {
		if u, ok := windowFrom(r).ActiveUntil(now); ok && u.After(until) {
			until = u
		}
	}
	return until, nil
}
