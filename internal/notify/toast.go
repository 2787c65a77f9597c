// Package notify builds operator toast notifications (SPEC "Notification
// (toast) payload") from what a caller sent.
package notify

import (
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/cairn-rmm/cairn"
)

// Defaults and bounds.
const (
	DefaultTitle = "Notification"
	DefaultTTLms = 5200
	minTTLms     = 1000
	maxTTLms     = 600000
	maxTitle     = 200
	maxMessage   = 2000
	maxIcon      = 64
)

// Input is the request body; pointers tell absent from empty.
type Input struct {
	Title    *string `json:"title" limit:"max=200"`
	Message  *string `json:"message" limit:"max=2000"`
	Icon     *string `json:"icon" limit:"max=64"`
	Variant  *string `json:"variant"`
	Type     *string `json:"type"`
	Severity *string `json:"severity"`
	Username *string `json:"username"`
	TTLms    *int64  `json:"ttl_ms"`
}

// Toast is the payload fanned out to operator streams.
type Toast struct {
	ID        string    `json:"id"`
	Title     string    `json:"title"`
	Message   string    `json:"message"`
	Icon      string    `json:"icon,omitempty"`
	Variant   string    `json:"variant"`
	TTLms     int64     `json:"ttl_ms"`
	Username  *string   `json:"username"`
	Role      string    `json:"role"`
	Sender    string    `json:"sender"`
	CreatedAt time.Time `json:"created_at"`
}

// Build validates in and adds the server fields.
func Build(in Input, sender, senderRole string, now time.Time) (Toast, error) {
	var v cairn.Validation
	t := Toast{ID: uuid.NewString(), Title: DefaultTitle, Variant: "info", TTLms: DefaultTTLms,
		Role: senderRole, Sender: sender, CreatedAt: now.UTC()}

	if in.Message == nil || strings.TrimSpace(*in.Message) == "" {
		v.Add("message", "is required")
	} else if n := len([]rune(*in.Message)); n > maxMessage {
		v.Add("message", fmt.Sprintf("must be at most %d characters", maxMessage))
	} else {
		t.Message = strings.ReplaceAll(*in.Message, "\r\n", "\n")
	}
	if in.Title != nil && strings.TrimSpace(*in.Title) != "" {
		if len([]rune(*in.Title)) > maxTitle {
			v.Add("title", fmt.Sprintf("must be at most %d characters", maxTitle))
		}
		t.Title = strings.TrimSpace(*in.Title)
	}
	if in.Icon != nil {
		if len(*in.Icon) > maxIcon {
			v.Add("icon", fmt.Sprintf("must be at most %d characters", maxIcon))
		}
		t.Icon = strings.TrimSpace(*in.Icon)
	}
	// variant has two aliases; the first one given wins, in spec order.
	for _, alias := range []struct {
		field string
		val   *string
	}{{"variant", in.Variant}, {"type", in.Type}, {"severity", in.Severity}} {
		if alias.val == nil {
			continue
		}
		switch strings.ToLower(strings.TrimSpace(*alias.val)) {
		case "info", "warning", "error":
			t.Variant = strings.ToLower(strings.TrimSpace(*alias.val))
		default:
			v.Add(alias.field, "must be one of info, warning, error")
		}
		break
	}
	if in.TTLms != nil {
		if *in.TTLms < minTTLms || *in.TTLms > maxTTLms {
			v.Add("ttl_ms", fmt.Sprintf("must be between %d and %d", minTTLms, maxTTLms))
		}
		t.TTLms = *in.TTLms
	}
	if in.Username != nil && strings.TrimSpace(*in.Username) != "" {
		u := strings.ToLower(strings.TrimSpace(*in.Username))
		t.Username = &u
	}
	return t, v.Err()
}
