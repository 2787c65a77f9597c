package watchdogs

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"net/mail"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/db"
	"github.com/cairn-rmm/cairn/internal/aegis"
)

// Notification channels (issue 25, docs/api.md "Watchdog notifications"):
// webhooks signed with HMAC-SHA256 and email over SMTP with STARTTLS,
// routed by severity and site, each (incident, step, channel) sent once
// (a delivery row claimed before sending), repeated while the incident
// stays Open, held back during maintenance windows.

// Channel kinds.
const (
	ChannelWebhook = "webhook"
	ChannelEmail   = "email"
)

// Delivery statuses.
const (
	DeliverySending   = "sending"
	DeliverySent      = "sent"
	DeliveryFailed    = "failed"
	DeliveryAbandoned = "abandoned"
)

// Channel limits.
const (
	MaxRepeatMinutes = 1440
	MaxRecipients    = 20
	maxURL           = 2048
	maxSecret        = 4096
	maxCAPEM         = 65536
	DefaultSMTPPort  = 587
)

// Cipher seals channel secrets (aegis.Cipher).
type Cipher interface {
	Seal(plaintext, aad []byte) ([]byte, error)
	Open(sealed, aad []byte) ([]byte, error)
	KeyID() []byte
}

// WebhookConfig is a webhook channel's settings.
type WebhookConfig struct {
	URL string `json:"url"`
	// AllowPrivateCIDRs are loopback, private, link-local or otherwise
	// reserved networks this webhook may reach all the same (a receiver
	// on the Engine's own network); by default it may reach none
	// (ssrf.go).
	AllowPrivateCIDRs []string `json:"allow_private_cidrs,omitempty"`
}

// EmailConfig is an email channel's settings. The password is the
// channel's secret.
type EmailConfig struct {
	Host     string   `json:"host"`
	Port     int      `json:"port"`
	Username string   `json:"username"`
	From     string   `json:"from"`
	To       []string `json:"to"`
	// CAPEM is an extra CA (PEM) the SMTP server's certificate may chain
	// to (a relay with a private CA); the system roots are trusted too.
	CAPEM string `json:"ca_pem"`
}

// channelConfig is what the config column holds.
type channelConfig struct {
	Webhook *WebhookConfig `json:"webhook,omitempty"`
	Email   *EmailConfig   `json:"email,omitempty"`
}

// ChannelInput is a channel to save. Secret nil keeps the saved one;
// a string replaces it.
type ChannelInput struct {
	Name          string
	Kind          string
	Enabled       bool
	MinSeverity   string
	SiteIDs       []int64
	RepeatMinutes int
	Webhook       *WebhookConfig
	Email         *EmailConfig
	Secret        *string
}

// Channel is a saved channel, its secret never included.
type Channel struct {
	ID            int64
	Name          string
	Kind          string
	Enabled       bool
	MinSeverity   string
	SiteIDs       []int64
	RepeatMinutes int
	Webhook       *WebhookConfig
	Email         *EmailConfig
	HasSecret     bool
	CreatedBy     string
	CreatedAt     time.Time
	UpdatedBy     string
	UpdatedAt     time.Time
}

func channelFrom(r db.NotificationChannel) (Channel, error) {
	var cfg channelConfig
	if err := json.Unmarshal(r.Config, &cfg); err != nil {
		return Channel{}, fmt.Errorf("notification channel %d config: %w", r.ID, err)
	}
	return Channel{ID: r.ID, Name: r.Name, Kind: r.Kind, Enabled: r.Enabled, MinSeverity: r.MinSeverity, SiteIDs: r.SiteIds,
		RepeatMinutes: int(r.RepeatMinutes), Webhook: cfg.Webhook, Email: cfg.Email, HasSecret: len(r.SecretSealed) > 0,
		CreatedBy: r.CreatedBy, CreatedAt: r.CreatedAt, UpdatedBy: r.UpdatedBy, UpdatedAt: r.UpdatedAt}, nil
}

// channelAAD binds a sealed secret to its channel.
func channelAAD(id int64) []byte {
	return []byte("cairn:notification_channel:" + strconv.FormatInt(id, 10) + ":secret")
}

// ChannelSealedColumns are the sealed column a data-key rotation re-seals.
func ChannelSealedColumns() []aegis.Column {
	return []aegis.Column{{Names: []string{"notification_channels.secret_sealed"},
		Reseal: func(ctx context.Context, q *db.Queries, r *aegis.Resealer) error {
			rows, err := q.NotificationChannelSealedList(ctx)
			if err != nil {
				return err
			}
			for _, c := range rows {
				v, changed, err := r.Reseal(c.SecretSealed, channelAAD(c.ID))
				if err != nil {
					return err
				}
				if changed {
					if err := q.NotificationChannelSealedUpdate(ctx, db.NotificationChannelSealedUpdateParams{ID: c.ID,
						SecretSealed: v, SecretKeyID: r.KeyID()}); err != nil {
						return err
					}
				}
			}
			return nil
		}}}
}

func hasControl(s string) bool { return strings.ContainsFunc(s, unicode.IsControl) }

// check validates a channel; creating says whether it is new (a webhook
// needs its secret then).
func (in ChannelInput) check(creating, hadSecret bool) (ChannelInput, error) {
	var v cairn.Validation
	in.Name = strings.TrimSpace(in.Name)
	switch {
	case in.Name == "":
		v.Add("name", "is required")
	case len(in.Name) > MaxName:
		v.Add("name", fmt.Sprintf("must be at most %d characters", MaxName))
	case hasControl(in.Name):
		v.Add("name", "must not contain control characters")
	}
	if in.MinSeverity == "" {
		in.MinSeverity = SeverityInfo
	}
	if !slices.Contains(Severities, in.MinSeverity) {
		v.Add("min_severity", "must be info, warning or critical")
	}
	if in.SiteIDs != nil {
		if len(in.SiteIDs) == 0 {
			v.Add("site_ids", "must name at least one site, or be null for every site")
		}
		in.SiteIDs = slices.Compact(slices.Sorted(slices.Values(in.SiteIDs)))
	}
	if in.RepeatMinutes < 0 || in.RepeatMinutes > MaxRepeatMinutes {
		v.Add("repeat_minutes", fmt.Sprintf("must be 0 (no repetition) to %d", MaxRepeatMinutes))
	}
	if in.Secret != nil && len(*in.Secret) > maxSecret {
		v.Add("secret", fmt.Sprintf("must be at most %d bytes", maxSecret))
	}
	hasSecret := hadSecret
	if in.Secret != nil {
		hasSecret = *in.Secret != ""
	}
	switch in.Kind {
	case ChannelWebhook:
		in.Email = nil
		if in.Webhook == nil {
			v.Add("webhook.url", "is required")
			break
		}
		u, err := url.Parse(in.Webhook.URL)
		switch {
		case in.Webhook.URL == "":
			v.Add("webhook.url", "is required")
		case len(in.Webhook.URL) > maxURL:
			v.Add("webhook.url", fmt.Sprintf("must be at most %d characters", maxURL))
		case err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "":
			v.Add("webhook.url", "must be an absolute http or https URL")
		case u.User != nil:
			v.Add("webhook.url", "must not hold credentials (the signature authenticates the Engine)")
		}
		if len(in.Webhook.AllowPrivateCIDRs) > MaxAllowCIDRs {
			v.Add("webhook.allow_private_cidrs", fmt.Sprintf("must name at most %d networks", MaxAllowCIDRs))
		}
		for i, c := range in.Webhook.AllowPrivateCIDRs {
			p, err := netip.ParsePrefix(strings.TrimSpace(c))
			if err != nil {
				v.Add(fmt.Sprintf("webhook.allow_private_cidrs[%d]", i), "must be a network in CIDR notation (10.1.2.0/24, 127.0.0.1/32)")
				continue
			}
			in.Webhook.AllowPrivateCIDRs[i] = p.Masked().String()
		}
		if !hasSecret {
			v.Add("secret", "is required: the HMAC-SHA256 key the webhook's signature is made with")
		}
	case ChannelEmail:
		in.Webhook = nil
		e := in.Email
		if e == nil {
			v.Add("email.host", "is required")
			break
		}
		e.Host = strings.TrimSpace(e.Host)
		if e.Host == "" || len(e.Host) > 253 || strings.ContainsAny(e.Host, " /:@") || hasControl(e.Host) {
			v.Add("email.host", "must be a host name or address")
		}
		if e.Port == 0 {
			e.Port = DefaultSMTPPort
		}
		if e.Port < 1 || e.Port > 65535 {
			v.Add("email.port", "must be 1 to 65535")
		}
		if len(e.Username) > 256 || hasControl(e.Username) {
			v.Add("email.username", "must be at most 256 characters without control characters")
		}
		if e.Username != "" && !hasSecret {
			v.Add("secret", "is required with a username: the SMTP password")
		}
		if a, err := mail.ParseAddress(e.From); err != nil || len(e.From) > 320 {
			v.Add("email.from", "must be an email address")
		} else {
			e.From = a.String()
		}
		switch {
		case len(e.To) == 0:
			v.Add("email.to", "must name at least one recipient")
		case len(e.To) > MaxRecipients:
			v.Add("email.to", fmt.Sprintf("must name at most %d recipients", MaxRecipients))
		}
		for i, to := range e.To {
			a, err := mail.ParseAddress(to)
			if err != nil || len(to) > 320 {
				v.Add(fmt.Sprintf("email.to[%d]", i), "must be an email address")
				continue
			}
			e.To[i] = a.Address
		}
		if e.CAPEM != "" {
			if len(e.CAPEM) > maxCAPEM || !x509.NewCertPool().AppendCertsFromPEM([]byte(e.CAPEM)) {
				v.Add("email.ca_pem", "must be PEM certificates")
			}
		}
	default:
		if creating {
			v.Add("kind", "must be webhook or email")
		} else {
			v.Add("kind", "cannot change (create another channel)")
		}
	}
	return in, v.Err()
}

func channelConflict(err error) error {
	if db.IsUniqueViolation(err, "notification_channels_name_idx") {
		return cairn.Invalid("name", "is used by another channel")
	}
	return err
}

func (s *Service) checkSites(ctx context.Context, field string, ids []int64) error {
	if ids == nil {
		return nil
	}
	n, err := s.store.SiteCountByIDs(ctx, ids)
	if err != nil {
		return err
	}
	if int(n) != len(ids) {
		return cairn.Invalid(field, "names a site that does not exist")
	}
	return nil
}

// CreateChannel saves a new channel, sealing its secret.
func (s *Service) CreateChannel(ctx context.Context, actor string, in ChannelInput) (Channel, error) {
	in, err := in.check(true, false)
	if err != nil {
		return Channel{}, err
	}
	if err := s.checkSites(ctx, "site_ids", in.SiteIDs); err != nil {
		return Channel{}, err
	}
	cfg, err := json.Marshal(channelConfig{Webhook: in.Webhook, Email: in.Email})
	if err != nil {
		return Channel{}, err
	}
	var out db.NotificationChannel
	err = s.store.InTx(ctx, func(q *db.Queries) error {
		if out, err = q.NotificationChannelInsert(ctx, db.NotificationChannelInsertParams{Name: in.Name, Kind: in.Kind,
			Enabled: in.Enabled, MinSeverity: in.MinSeverity, SiteIds: in.SiteIDs, RepeatMinutes: int32(in.RepeatMinutes),
			Config: cfg, Actor: actor}); err != nil {
			return channelConflict(err)
		}
		return s.setSecret(ctx, q, &out, in.Secret)
	})
	if err != nil {
		return Channel{}, err
	}
	return channelFrom(out)
}

// UpdateChannel saves a channel; its kind stays, its secret is kept
// unless the input names one.
func (s *Service) UpdateChannel(ctx context.Context, actor string, id int64, in ChannelInput) (Channel, error) {
	var out db.NotificationChannel
	err := s.store.InTx(ctx, func(q *db.Queries) error {
		cur, err := q.NotificationChannelGet(ctx, id)
		if err != nil {
			return db.NotFound(err, "notification channel not found")
		}
		if in.Kind != cur.Kind {
			in.Kind = ""
		}
		if in, err = in.check(false, len(cur.SecretSealed) > 0); err != nil {
			return err
		}
		if err := s.checkSites(ctx, "site_ids", in.SiteIDs); err != nil {
			return err
		}
		cfg, err := json.Marshal(channelConfig{Webhook: in.Webhook, Email: in.Email})
		if err != nil {
			return err
		}
		if out, err = q.NotificationChannelUpdate(ctx, db.NotificationChannelUpdateParams{ID: id, Name: in.Name, Enabled: in.Enabled,
			MinSeverity: in.MinSeverity, SiteIds: in.SiteIDs, RepeatMinutes: int32(in.RepeatMinutes), Config: cfg,
			Actor: actor}); err != nil {
			return channelConflict(err)
		}
		return s.setSecret(ctx, q, &out, in.Secret)
	})
	if err != nil {
		return Channel{}, err
	}
	return channelFrom(out)
}

func (s *Service) setSecret(ctx context.Context, q *db.Queries, r *db.NotificationChannel, secret *string) error {
	if secret == nil {
		return nil
	}
	var sealed, key []byte
	if *secret != "" {
		if s.cfg.Cipher == nil {
			return fmt.Errorf("watchdogs: no cipher to seal a channel secret")
		}
		var err error
		if sealed, err = s.cfg.Cipher.Seal([]byte(*secret), channelAAD(r.ID)); err != nil {
			return err
		}
		key = s.cfg.Cipher.KeyID()
	}
	r.SecretSealed, r.SecretKeyID = sealed, key
	return q.NotificationChannelSetSecret(ctx, db.NotificationChannelSetSecretParams{ID: r.ID, SecretSealed: sealed, SecretKeyID: key})
}

// openSecret is a channel's secret in the clear ("" when it has none).
func (s *Service) openSecret(r db.NotificationChannel) (string, error) {
	if len(r.SecretSealed) == 0 {
		return "", nil
	}
	if s.cfg.Cipher == nil {
		return "", fmt.Errorf("watchdogs: no cipher to open channel %d's secret", r.ID)
	}
	plain, err := s.cfg.Cipher.Open(r.SecretSealed, channelAAD(r.ID))
	if err != nil {
		// The error names neither the secret nor the key.
		return "", cairn.Errorf(cairn.ECodeValidation, "the secret of notification channel %d is unreadable (set it again)", r.ID)
	}
	return string(plain), nil
}

// GetChannel is one channel.
func (s *Service) GetChannel(ctx context.Context, id int64) (Channel, error) {
	r, err := s.store.NotificationChannelGet(ctx, id)
	if err != nil {
		return Channel{}, db.NotFound(err, "notification channel not found")
	}
	return channelFrom(r)
}

// ListChannels is every channel.
func (s *Service) ListChannels(ctx context.Context) ([]Channel, error) {
	rows, err := s.store.NotificationChannelList(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]Channel, 0, len(rows))
	for _, r := range rows {
		c, err := channelFrom(r)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

// DeleteChannel removes a channel and its deliveries.
func (s *Service) DeleteChannel(ctx context.Context, id int64) error {
	n, err := s.store.NotificationChannelDelete(ctx, id)
	if err != nil {
		return err
	}
	if n == 0 {
		return cairn.Errorf(cairn.ECodeNotFound, "notification channel not found")
	}
	return nil
}

// Deliveries are what was sent for an incident.
func (s *Service) Deliveries(ctx context.Context, scope cairn.SiteScope, incidentID int64) ([]db.NotificationDelivery, error) {
	inc, err := s.store.WatchdogIncidentGet(ctx, incidentID)
	if err != nil || !scope.Allows(cairn.SiteID(inc.SiteID)) {
		return nil, db.NotFound(orNoRows(err), "incident not found")
	}
	return s.store.NotificationDeliveryList(ctx, incidentID)
}
