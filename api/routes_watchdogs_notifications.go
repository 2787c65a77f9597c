package api

import (
	"net/http"
	"time"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/internal/watchdogs"
)

// Notification channels, maintenance windows and deliveries (issue 25,
// docs/api.md "Watchdog notifications"); admin-only but for an
// incident's deliveries, which follow the incident's scope.

// channelRequest is a channel to save.
type channelRequest struct {
	Name string `json:"name" limit:"max=120"`
	// Kind is webhook or email; it cannot change.
	Kind string `json:"kind"`
	// Enabled defaults to true.
	Enabled *bool `json:"enabled"`
	// MinSeverity routes incidents of this severity and above (default info).
	MinSeverity string `json:"min_severity"`
	// SiteIDs routes incidents of these sites (null: every site).
	SiteIDs []int64 `json:"site_ids" limit:"max=1000"`
	// RepeatMinutes repeats the notification while the incident stays
	// Open (0: once).
	RepeatMinutes int                      `json:"repeat_minutes"`
	Webhook       *watchdogs.WebhookConfig `json:"webhook"`
	Email         *watchdogs.EmailConfig   `json:"email"`
	// Secret is the webhook's HMAC key or the SMTP password; write-only.
	// Null or absent keeps the saved one, "" clears it.
	Secret *string `json:"secret" limit:"max=4096"`
}

func (req channelRequest) input() watchdogs.ChannelInput {
	return watchdogs.ChannelInput{Name: req.Name, Kind: req.Kind, Enabled: req.Enabled == nil || *req.Enabled,
		MinSeverity: req.MinSeverity, SiteIDs: req.SiteIDs, RepeatMinutes: req.RepeatMinutes, Webhook: req.Webhook,
		Email: req.Email, Secret: req.Secret}
}

// channelJSON is a channel; its secret is never included.
type channelJSON struct {
	ID            int64                    `json:"id"`
	Name          string                   `json:"name"`
	Kind          string                   `json:"kind"`
	Enabled       bool                     `json:"enabled"`
	MinSeverity   string                   `json:"min_severity"`
	SiteIDs       []int64                  `json:"site_ids" openapi:"nullable"`
	RepeatMinutes int                      `json:"repeat_minutes"`
	Webhook       *watchdogs.WebhookConfig `json:"webhook"`
	Email         *watchdogs.EmailConfig   `json:"email"`
	HasSecret     bool                     `json:"has_secret"`
	CreatedBy     string                   `json:"created_by"`
	CreatedAt     time.Time                `json:"created_at"`
	UpdatedBy     string                   `json:"updated_by"`
	UpdatedAt     time.Time                `json:"updated_at"`
}

func toChannelJSON(c watchdogs.Channel) channelJSON {
	return channelJSON{ID: c.ID, Name: c.Name, Kind: c.Kind, Enabled: c.Enabled, MinSeverity: c.MinSeverity, SiteIDs: c.SiteIDs,
		RepeatMinutes: c.RepeatMinutes, Webhook: c.Webhook, Email: c.Email, HasSecret: c.HasSecret, CreatedBy: c.CreatedBy,
		CreatedAt: c.CreatedAt, UpdatedBy: c.UpdatedBy, UpdatedAt: c.UpdatedAt}
}

type channelsJSON struct {
	Channels []channelJSON `json:"channels"`
}

func channelID(r *http.Request) (int64, error) {
	id, err := pathID(r, "channel_id")
	if err != nil {
		return 0, cairn.Errorf(cairn.ECodeNotFound, "notification channel not found")
	}
	return id, nil
}

func (a *watchdogsAPI) listChannels(r *http.Request) (channelsJSON, error) {
	list, err := a.Watchdogs.ListChannels(r.Context())
	if err != nil {
		return channelsJSON{}, err
	}
	out := channelsJSON{Channels: make([]channelJSON, len(list))}
	for i, c := range list {
		out.Channels[i] = toChannelJSON(c)
	}
	return out, nil
}

func (a *watchdogsAPI) createChannel(r *http.Request, req channelRequest) (channelJSON, error) {
	c, err := a.Watchdogs.CreateChannel(r.Context(), principal(r.Context()).Username, req.input())
	return toChannelJSON(c), err
}

func (a *watchdogsAPI) getChannel(r *http.Request) (channelJSON, error) {
	id, err := channelID(r)
	if err != nil {
		return channelJSON{}, err
	}
	c, err := a.Watchdogs.GetChannel(r.Context(), id)
	return toChannelJSON(c), err
}

func (a *watchdogsAPI) updateChannel(r *http.Request, req channelRequest) (channelJSON, error) {
	id, err := channelID(r)
	if err != nil {
		return channelJSON{}, err
	}
	c, err := a.Watchdogs.UpdateChannel(r.Context(), principal(r.Context()).Username, id, req.input())
	return toChannelJSON(c), err
}

func (a *watchdogsAPI) removeChannel(r *http.Request, _ struct{}) (struct{}, error) {
	id, err := channelID(r)
	if err != nil {
		return struct{}{}, err
	}
	return struct{}{}, a.Watchdogs.DeleteChannel(r.Context(), id)
}

// channelTestJSON is a test notification's outcome.
type channelTestJSON struct {
	// Outcome is delivered, refused (for good: the receiver, the SMTP
	// server or the private-address guard said no) or failed (a
	// transient error, a timeout).
	Outcome string `json:"outcome"`
	// Code is notification_refused for a refusal, else empty.
	Code string `json:"code"`
	// Error says why it was not delivered (never the secret).
	Error string `json:"error"`
	// Delivery is the X-Cairn-Delivery the test carried (test-<channel>-<n>).
	Delivery   string `json:"delivery"`
	DurationMS int64  `json:"duration_ms"`
}

func (a *watchdogsAPI) testChannel(r *http.Request, _ struct{}) (channelTestJSON, error) {
	id, err := channelID(r)
	if err != nil {
		return channelTestJSON{}, err
	}
	res, err := a.Watchdogs.TestChannel(r.Context(), principal(r.Context()).Username, id)
	return channelTestJSON{Outcome: res.Outcome, Code: res.Code, Error: res.Error, Delivery: res.Delivery,
		DurationMS: res.Duration.Milliseconds()}, err
}

// windowRequest is a maintenance window to save: exactly one of site_id,
// guid and watchdog_id.
type windowRequest struct {
	Name       string  `json:"name" limit:"max=120"`
	SiteID     *int64  `json:"site_id"`
	DeviceGUID *string `json:"guid"`
	WatchdogID *int64  `json:"watchdog_id"`
	// Weekdays are 0 (Sunday) to 6.
	Weekdays []int `json:"weekdays" limit:"max=7"`
	// StartMinute is minutes after midnight in TimeZone.
	StartMinute     int    `json:"start_minute"`
	DurationMinutes int    `json:"duration_minutes"`
	TimeZone        string `json:"time_zone" limit:"max=64"`
}

func (req windowRequest) input() watchdogs.WindowInput {
	return watchdogs.WindowInput{Name: req.Name, SiteID: req.SiteID, DeviceGUID: req.DeviceGUID, WatchdogID: req.WatchdogID,
		Weekdays: req.Weekdays, StartMinute: req.StartMinute, DurationMinutes: req.DurationMinutes, TimeZone: req.TimeZone}
}

// windowJSON is a maintenance window.
type windowJSON struct {
	ID              int64     `json:"id"`
	Name            string    `json:"name"`
	SiteID          *int64    `json:"site_id"`
	DeviceGUID      *string   `json:"guid"`
	WatchdogID      *int64    `json:"watchdog_id"`
	Weekdays        []int     `json:"weekdays"`
	StartMinute     int       `json:"start_minute"`
	DurationMinutes int       `json:"duration_minutes"`
	TimeZone        string    `json:"time_zone"`
	Active          bool      `json:"active"`
	CreatedBy       string    `json:"created_by"`
	CreatedAt       time.Time `json:"created_at"`
}

func toWindowJSON(w watchdogs.Window) windowJSON {
	_, active := w.ActiveUntil(time.Now())
	return windowJSON{ID: w.ID, Name: w.Name, SiteID: w.SiteID, DeviceGUID: w.DeviceGUID, WatchdogID: w.WatchdogID,
		Weekdays: w.Weekdays, StartMinute: w.StartMinute, DurationMinutes: w.DurationMinutes, TimeZone: w.TimeZone,
		Active: active, CreatedBy: w.CreatedBy, CreatedAt: w.CreatedAt}
}

type windowsJSON struct {
	Windows []windowJSON `json:"windows"`
}

func windowID(r *http.Request) (int64, error) {
	id, err := pathID(r, "window_id")
	if err != nil {
		return 0, cairn.Errorf(cairn.ECodeNotFound, "maintenance window not found")
	}
	return id, nil
}

func (a *watchdogsAPI) listWindows(r *http.Request) (windowsJSON, error) {
	list, err := a.Watchdogs.ListWindows(r.Context())
	if err != nil {
		return windowsJSON{}, err
	}
	out := windowsJSON{Windows: make([]windowJSON, len(list))}
	for i, w := range list {
		out.Windows[i] = toWindowJSON(w)
	}
	return out, nil
}

func (a *watchdogsAPI) createWindow(r *http.Request, req windowRequest) (windowJSON, error) {
	w, err := a.Watchdogs.SaveWindow(r.Context(), principal(r.Context()).Username, 0, req.input())
	return toWindowJSON(w), err
}

func (a *watchdogsAPI) updateWindow(r *http.Request, req windowRequest) (windowJSON, error) {
	id, err := windowID(r)
	if err != nil {
		return windowJSON{}, err
	}
	w, err := a.Watchdogs.SaveWindow(r.Context(), principal(r.Context()).Username, id, req.input())
	return toWindowJSON(w), err
}

func (a *watchdogsAPI) removeWindow(r *http.Request, _ struct{}) (struct{}, error) {
	id, err := windowID(r)
	if err != nil {
		return struct{}{}, err
	}
	return struct{}{}, a.Watchdogs.DeleteWindow(r.Context(), id)
}

// deliveryJSON is one (incident, step, channel) send.
type deliveryJSON struct {
	Step      int        `json:"step"`
	ChannelID int64      `json:"channel_id"`
	Status    string     `json:"status"`
	Attempts  int        `json:"attempts"`
	Error     string     `json:"error"`
	ClaimedAt time.Time  `json:"claimed_at"`
	SentAt    *time.Time `json:"sent_at"`
}

type deliveriesJSON struct {
	Deliveries []deliveryJSON `json:"deliveries"`
}

func (a *watchdogsAPI) deliveries(r *http.Request) (deliveriesJSON, error) {
	id, err := incidentID(r)
	if err != nil {
		return deliveriesJSON{}, err
	}
	rows, err := a.Watchdogs.Deliveries(r.Context(), principal(r.Context()).SiteScope(), id)
	if err != nil {
		return deliveriesJSON{}, err
	}
	out := deliveriesJSON{Deliveries: make([]deliveryJSON, len(rows))}
	for i, d := range rows {
		out.Deliveries[i] = deliveryJSON{Step: int(d.Step), ChannelID: d.ChannelID, Status: d.Status, Attempts: int(d.Attempts),
			Error: d.Error, ClaimedAt: d.ClaimedAt, SentAt: d.SentAt}
	}
	return out, nil
}
