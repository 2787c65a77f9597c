package watchdogs

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/mail"
	"net/smtp"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/db"
)

// Webhook headers (docs/api.md "Watchdog notifications").
const (
	// HeaderSignature is "sha256=" and the hex HMAC-SHA256, keyed with the
	// channel's secret, of the timestamp header's value, ".", and the body.
	HeaderSignature = "X-Cairn-Signature"
	HeaderTimestamp = "X-Cairn-Timestamp"
	// HeaderDelivery names the delivery (<incident>-<step>-<channel>),
	// the same on every attempt: a receiver may drop a repeat.
	HeaderDelivery = "X-Cairn-Delivery"
	HeaderEvent    = "X-Cairn-Event"
)

// EventIncident is the notification payload's type; EventTest a test's
// (POST /api/watchdogs/channels/<id>/test), whose incident is made up.
const (
	EventIncident = "watchdog.incident"
	EventTest     = "watchdog.test"
)

// ECodeDeliveryRefused: the receiver refused the notification for good
// (a 4xx other than 408 and 429); retrying will not change that.
const ECodeDeliveryRefused = "notification_refused"

// NotifyPlan is what one notification step sends.
type NotifyPlan struct {
	// Active: the incident is not resolved.
	Active bool
	// Channels are due now (routed, never notified of this incident or
	// their repeat interval passed, the incident Open or, at the first
	// step, not suppressed).
	Channels []int64
	// Next is how long until another step may be due (0: none will be;
	// the incident is no longer Open or no routed channel repeats).
	Next time.Duration
	// MutedUntil is the end of the maintenance window holding the
	// step's notifications back (zero: none).
	MutedUntil time.Time
}

// PlanNotifications decides a notification step of an incident.
func (s *Service) PlanNotifications(ctx context.Context, incidentID int64, step int) (NotifyPlan, error) {
	inc, err := s.GetIncident(ctx, incidentID)
	if cairn.IsCode(err, cairn.ECodeNotFound) {
		return NotifyPlan{}, nil
	} else if err != nil {
		return NotifyPlan{}, err
	}
	if inc.State == StateResolved {
		return NotifyPlan{}, nil
	}
	p := NotifyPlan{Active: true}
	// Repeats go out while nobody owns the incident; the opening's
	// notification goes out unless it was suppressed first.
	if inc.State != StateOpen && !(step == 0 && inc.State == StateAcknowledged) {
		return p, nil
	}
	routed, err := s.store.NotificationChannelsFor(ctx, db.NotificationChannelsForParams{Severity: inc.Severity, SiteID: int64(inc.SiteID)})
	if err != nil || len(routed) == 0 {
		return p, err
	}
	now := s.cfg.Now()
	if p.MutedUntil, err = s.mutedUntil(ctx, inc, now); err != nil {
		return p, err
	}
	if !p.MutedUntil.IsZero() {
		p.Next = p.MutedUntil.Sub(now) + time.Second
		return p, nil
	}
	lastRows, err := s.store.NotificationDeliveryLastSent(ctx, incidentID)
	if err != nil {
		return p, err
	}
	last := make(map[int64]time.Time, len(lastRows))
	for _, r := range lastRows {
		last[r.ChannelID] = r.LastAt
	}
	for _, c := range routed {
		repeat := time.Duration(c.RepeatMinutes) * time.Minute
		at, notified := last[c.ID]
		next := time.Duration(0)
		switch {
		case !notified:
			p.Channels = append(p.Channels, c.ID)
			next = repeat
		case repeat > 0 && !now.Before(at.Add(repeat)):
			p.Channels = append(p.Channels, c.ID)
			next = repeat
		case repeat > 0:
			next = at.Add(repeat).Sub(now)
		}
		if inc.State == StateOpen && next > 0 && (p.Next == 0 || next < p.Next) {
			p.Next = next
		}
	}
	return p, nil
}

// Delivery is one channel's send of one step.
type Delivery struct {
	IncidentID int64
	Step       int
	ChannelID  int64
}

// ID is the delivery's name (HeaderDelivery).
func (d Delivery) ID() string { return fmt.Sprintf("%d-%d-%d", d.IncidentID, d.Step, d.ChannelID) }

// IncidentPayload is the incident as a notification carries it.
type IncidentPayload struct {
	ID           int64            `json:"id"`
	WatchdogID   int64            `json:"watchdog_id"`
	WatchdogName string           `json:"watchdog_name"`
	DeviceGUID   cairn.DeviceGUID `json:"guid"`
	Hostname     string           `json:"hostname"`
	SiteID       cairn.SiteID     `json:"site_id"`
	Severity     string           `json:"severity"`
	Title        string           `json:"title"`
	State        string           `json:"state"`
	Sampled      json.RawMessage  `json:"sampled"`
	OpenedAt     time.Time        `json:"opened_at"`
}

// Payload is a webhook's body (docs/api.md "Watchdog notifications").
type Payload struct {
	Type     string `json:"type"`
	Delivery string `json:"delivery"`
	Step     int    `json:"step"`
	Repeat   bool   `json:"repeat"`
	// Test marks a test notification: no incident, nothing to page for.
	Test     bool            `json:"test,omitempty"`
	SentAt   time.Time       `json:"sent_at"`
	Incident IncidentPayload `json:"incident"`
}

// Deliver sends one (incident, step, channel) at most once: it claims the
// delivery row first. A row already sent, or claimed by an attempt that
// died before it could record the result (kill -9 between claim and
// answer), is not sent again: the latter is marked abandoned. A clean
// failure is recorded and returned (the caller retries; the retry claims
// the failed row again). It answers the delivery's status.
func (s *Service) Deliver(ctx context.Context, d Delivery) (string, error) {
	ch, err := s.store.NotificationChannelGet(ctx, d.ChannelID)
	if db.IsNoRows(err) {
		return "", nil // deleted meanwhile
	} else if err != nil {
		return "", err
	}
	inc, err := s.GetIncident(ctx, d.IncidentID)
	if cairn.IsCode(err, cairn.ECodeNotFound) {
		return "", nil
	} else if err != nil {
		return "", err
	}
	key := db.NotificationDeliveryClaimParams{IncidentID: d.IncidentID, Step: int32(d.Step), ChannelID: d.ChannelID}
	if _, err := s.store.NotificationDeliveryClaim(ctx, key); db.IsNoRows(err) {
		cur, err := s.store.NotificationDeliveryGet(ctx, db.NotificationDeliveryGetParams(key))
		if err != nil {
			return "", err
		}
		if cur.Status == DeliverySending {
			err := s.finish(ctx, d, DeliveryAbandoned, "an earlier attempt stopped after claiming the delivery; not sent again")
			return DeliveryAbandoned, err
		}
		return cur.Status, nil
	} else if err != nil {
		return "", err
	}
	sendErr := s.send(ctx, ch, inc, d)
	if sendErr != nil {
		if err := s.finish(ctx, d, DeliveryFailed, sendErr.Error()); err != nil {
			return "", err
		}
		return DeliveryFailed, sendErr
	}
	return DeliverySent, s.finish(ctx, d, DeliverySent, "")
}

func (s *Service) finish(ctx context.Context, d Delivery, status, msg string) error {
	if len(msg) > 1000 {
		msg = msg[:1000]
	}
	return s.store.NotificationDeliveryFinish(ctx, db.NotificationDeliveryFinishParams{IncidentID: d.IncidentID, Step: int32(d.Step),
		ChannelID: d.ChannelID, Status: status, Error: msg})
}

func (s *Service) payload(ctx context.Context, inc db.WatchdogIncident, d Delivery) (Payload, error) {
	name := ""
	if w, err := s.store.WatchdogGet(ctx, inc.WatchdogID); err == nil {
		name = w.Name
	}
	host := ""
	if dev, err := s.store.DeviceGetByGUID(ctx, cairn.DeviceGUID(inc.DeviceGuid)); err == nil {
		host = dev.Hostname
	}
	return Payload{Type: EventIncident, Delivery: d.ID(), Step: d.Step, Repeat: d.Step > 0, SentAt: s.cfg.Now().UTC(),
		Incident: IncidentPayload{ID: inc.ID, WatchdogID: inc.WatchdogID, WatchdogName: name, DeviceGUID: inc.DeviceGuid,
			Hostname: host, SiteID: inc.SiteID, Severity: inc.Severity, Title: inc.Title, State: inc.State,
			Sampled: json.RawMessage(inc.Sampled), OpenedAt: inc.OpenedAt}}, nil
}

func (s *Service) send(ctx context.Context, ch db.NotificationChannel, inc db.WatchdogIncident, d Delivery) error {
	p, err := s.payload(ctx, inc, d)
	if err != nil {
		return err
	}
	return s.sendPayload(ctx, ch, p)
}

// sendPayload sends p on channel ch: an incident's delivery and a test
// take this one path. Its error never holds the channel's secret.
func (s *Service) sendPayload(ctx context.Context, ch db.NotificationChannel, p Payload) error {
	c, err := channelFrom(ch)
	if err != nil {
		return err
	}
	secret, err := s.openSecret(ch)
	if err != nil {
		return err
	}
	switch {
	case c.Kind == ChannelWebhook && c.Webhook != nil:
		err = s.sendWebhook(ctx, *c.Webhook, secret, p)
	case c.Kind == ChannelEmail && c.Email != nil:
		err = sendEmail(ctx, *c.Email, secret, p)
	default:
		err = fmt.Errorf("notification channel %d has no %s settings", c.ID, c.Kind)
	}
	return redact(err, secret)
}

// redact keeps a secret out of an error a server's answer may have
// echoed it into.
func redact(err error, secret string) error {
	if err == nil || secret == "" || !strings.Contains(err.Error(), secret) {
		return err
	}
	msg := strings.ReplaceAll(err.Error(), secret, "[redacted]")
	var ce *cairn.Error
	if errors.As(err, &ce) {
		return cairn.Errorf(ce.Code, "%s", msg)
	}
	return errors.New(msg)
}

// Sign is a webhook's signature header value for body sent at ts.
func Sign(secret string, ts string, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(ts))
	m.Write([]byte{'.'})
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

func (s *Service) sendWebhook(ctx context.Context, cfg WebhookConfig, secret string, p Payload) error {
	body, err := json.Marshal(p)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, cfg.URL, bytes.NewReader(body))
	if err != nil {
		return err
	}
	ts := strconv.FormatInt(p.SentAt.Unix(), 10)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "Cairn-Engine")
	req.Header.Set(HeaderEvent, p.Type)
	req.Header.Set(HeaderDelivery, p.Delivery)
	req.Header.Set(HeaderTimestamp, ts)
	req.Header.Set(HeaderSignature, Sign(secret, ts, body))
	guard, err := newAddrGuard(cfg.AllowPrivateCIDRs)
	if err != nil {
		return cairn.Errorf(ECodeDeliveryRefused, "%s", err.Error())
	}
	res, err := guard.client(30 * time.Second).Do(req)
	if err != nil {
		if refused := refusedDial(err); refused != nil {
			return refused
		}
		// The transport's error without the URL (a receiver's URL may
		// carry a token of its own; deliveries are shown to operators).
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return fmt.Errorf("webhook: %w", err)
	}
	defer res.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, 64<<10))
	switch {
	case res.StatusCode >= 200 && res.StatusCode < 300:
		return nil
	case res.StatusCode >= 400 && res.StatusCode < 500 && res.StatusCode != http.StatusRequestTimeout &&
		res.StatusCode != http.StatusTooManyRequests:
		return cairn.Errorf(ECodeDeliveryRefused, "webhook answered %d", res.StatusCode)
	}
	return fmt.Errorf("webhook answered %d", res.StatusCode)
}

// sendEmail sends p over SMTP, refusing a server that does not offer
// STARTTLS (a password or an incident never travels in the clear).
func sendEmail(ctx context.Context, cfg EmailConfig, password string, p Payload) error {
	addr := net.JoinHostPort(cfg.Host, strconv.Itoa(cfg.Port))
	dialer := net.Dialer{Timeout: 30 * time.Second}
	conn, err := dialer.DialContext(ctx, "tcp", addr)
	if err != nil {
		return fmt.Errorf("smtp: %w", err)
	}
	deadline := time.Now().Add(time.Minute)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	_ = conn.SetDeadline(deadline)
	c, err := smtp.NewClient(conn, cfg.Host)
	if err != nil {
		conn.Close()
		return fmt.Errorf("smtp: %w", err)
	}
	defer c.Close()
	if err := c.Hello("cairn-engine"); err != nil {
		return fmt.Errorf("smtp: %w", err)
	}
	if ok, _ := c.Extension("STARTTLS"); !ok {
		return cairn.Errorf(ECodeDeliveryRefused, "smtp: %s does not offer STARTTLS", addr)
	}
	roots, err := x509.SystemCertPool()
	if err != nil || roots == nil {
		roots = x509.NewCertPool()
	}
	if cfg.CAPEM != "" {
		roots.AppendCertsFromPEM([]byte(cfg.CAPEM))
	}
	if err := c.StartTLS(&tls.Config{ServerName: cfg.Host, RootCAs: roots, MinVersion: tls.VersionTLS12}); err != nil {
		return fmt.Errorf("smtp starttls: %w", err)
	}
	if cfg.Username != "" {
		if err := c.Auth(smtp.PlainAuth("", cfg.Username, password, cfg.Host)); err != nil {
			// The server's answer, never the password.
			return cairn.Errorf(ECodeDeliveryRefused, "smtp auth as %s refused: %v", cfg.Username, err)
		}
	}
	from, err := mail.ParseAddress(cfg.From)
	if err != nil {
		return cairn.Errorf(ECodeDeliveryRefused, "smtp: the sender is not an address")
	}
	if err := c.Mail(from.Address); err != nil {
		return fmt.Errorf("smtp mail: %w", err)
	}
	for _, to := range cfg.To {
		if err := c.Rcpt(to); err != nil {
			return fmt.Errorf("smtp rcpt %s: %w", to, err)
		}
	}
	w, err := c.Data()
	if err != nil {
		return fmt.Errorf("smtp data: %w", err)
	}
	if _, err := w.Write(emailMessage(cfg, p)); err != nil {
		return fmt.Errorf("smtp data: %w", err)
	}
	if err := w.Close(); err != nil {
		return fmt.Errorf("smtp data: %w", err)
	}
	if err := c.Quit(); err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("smtp quit: %w", err)
	}
	return nil
}

// emailMessage is the notification as a plain-text message.
func emailMessage(cfg EmailConfig, p Payload) []byte {
	inc := p.Incident
	prefix := "[Cairn]"
	switch {
	case p.Test:
		prefix = "[Cairn, test]"
	case p.Repeat:
		prefix = "[Cairn, reminder]"
	}
	subject := fmt.Sprintf("%s %s: %s", prefix, strings.ToUpper(inc.Severity), inc.Title)
	var b bytes.Buffer
	fmt.Fprintf(&b, "From: %s\r\n", cfg.From)
	fmt.Fprintf(&b, "To: %s\r\n", strings.Join(cfg.To, ", "))
	fmt.Fprintf(&b, "Subject: %s\r\n", mime.QEncoding.Encode("utf-8", subject))
	fmt.Fprintf(&b, "Date: %s\r\n", p.SentAt.Format(time.RFC1123Z))
	fmt.Fprintf(&b, "Message-ID: <%s@cairn>\r\n", p.Delivery)
	fmt.Fprintf(&b, "%s: %s\r\n", HeaderDelivery, p.Delivery)
	b.WriteString("MIME-Version: 1.0\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Transfer-Encoding: 8bit\r\n\r\n")
	fmt.Fprintf(&b, "Watchdog: %s\r\nDevice: %s (%s)\r\nSeverity: %s\r\nState: %s\r\nOpened: %s\r\n\r\n%s\r\n\r\nSampled: %s\r\n",
		inc.WatchdogName, inc.Hostname, inc.DeviceGUID, inc.Severity, inc.State, inc.OpenedAt.UTC().Format(time.RFC3339),
		inc.Title, string(inc.Sampled))
	return b.Bytes()
}
