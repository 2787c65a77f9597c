package watchdogs

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/db"
)

// TestSendTimeout bounds a test notification: the admin waits for its
// outcome.
const TestSendTimeout = 20 * time.Second

// Test outcomes.
const (
	TestDelivered = "delivered"
	TestRefused   = "refused"
	TestFailed    = "failed"
)

// TestResult is a test notification's outcome.
type TestResult struct {
	// Outcome is delivered, refused (final: the receiver, the SMTP
	// server or the address guard said no) or failed (worth retrying).
	Outcome string
	// Code is the refusal's error code (notification_refused).
	Code string
	// Error says why it was not delivered; it never holds the secret.
	Error    string
	Delivery string
	Duration time.Duration
}

// TestChannel sends a made-up incident, marked as a test, on channel id
// the way an incident's delivery goes (the address guard, the signature,
// STARTTLS) and answers its outcome within TestSendTimeout. It sends
// once (no retries) and records no delivery: there is no incident. A
// disabled channel can be tested before it is enabled.
func (s *Service) TestChannel(ctx context.Context, actor string, id int64) (TestResult, error) {
	ch, err := s.store.NotificationChannelGet(ctx, id)
	if err != nil {
		return TestResult{}, db.NotFound(err, "notification channel not found")
	}
	now := s.cfg.Now().UTC()
	p := Payload{Type: EventTest, Delivery: fmt.Sprintf("test-%d-%d", id, now.UnixNano()), Test: true, SentAt: now,
		Incident: IncidentPayload{WatchdogName: "Test notification", Hostname: "example-device", Severity: SeverityInfo,
			State: StateOpen, Title: fmt.Sprintf("Test notification from Cairn, sent by %s", actor),
			Sampled: json.RawMessage(`{}`), OpenedAt: now}}
	ctx, cancel := context.WithTimeout(ctx, TestSendTimeout)
	defer cancel()
	start := time.Now()
	err = s.sendPayload(ctx, ch, p)
	res := TestResult{Outcome: TestDelivered, Delivery: p.Delivery, Duration: time.Since(start)}
	switch {
	case err == nil:
	case cairn.IsCode(err, ECodeDeliveryRefused):
		res.Outcome, res.Code, res.Error = TestRefused, ECodeDeliveryRefused, err.Error()
	default:
		res.Outcome, res.Error = TestFailed, err.Error()
	}
	if len(res.Error) > 1000 {
		res.Error = res.Error[:1000]
	}
	s.cfg.Log.Info("notification channel tested", "channel_id", id, "actor", actor, "outcome", res.Outcome)
	return res, nil
}
