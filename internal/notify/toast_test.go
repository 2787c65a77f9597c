package notify_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/internal/notify"
)

func ptr[T any](v T) *T { return &v }

func TestBuildAppliesTheSpecRules(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 21, 8, 0, 0, 0, time.FixedZone("x", 3600))
	cases := []struct {
		name    string
		in      notify.Input
		variant string
		title   string
		ttl     int64
		field   string // validation field expected, "" for success
	}{
		{"defaults", notify.Input{Message: ptr("hi")}, "info", "Notification", 5200, ""},
		{"variant any case", notify.Input{Message: ptr("hi"), Variant: ptr("Error")}, "error", "Notification", 5200, ""},
		{"type alias", notify.Input{Message: ptr("hi"), Type: ptr("warning")}, "warning", "Notification", 5200, ""},
		{"severity alias", notify.Input{Message: ptr("hi"), Severity: ptr("ERROR")}, "error", "Notification", 5200, ""},
		{"variant wins over aliases", notify.Input{Message: ptr("hi"), Variant: ptr("info"), Severity: ptr("error")}, "info", "Notification", 5200, ""},
		{"title and ttl", notify.Input{Message: ptr("hi"), Title: ptr(" Backup "), TTLms: ptr(int64(9000))}, "info", "Backup", 9000, ""},
		{"blank title keeps default", notify.Input{Message: ptr("hi"), Title: ptr("  ")}, "info", "Notification", 5200, ""},
		{"missing message", notify.Input{}, "", "", 0, "message"},
		{"blank message", notify.Input{Message: ptr(" \n ")}, "", "", 0, "message"},
		{"unknown variant", notify.Input{Message: ptr("hi"), Type: ptr("success")}, "", "", 0, "type"},
		{"ttl too short", notify.Input{Message: ptr("hi"), TTLms: ptr(int64(10))}, "", "", 0, "ttl_ms"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			toast, err := notify.Build(tc.in, "alice", "operator", now)
			if tc.field != "" {
				require.Equal(t, cairn.ECodeValidation, cairn.ErrorCode(err))
				require.Contains(t, err.(*cairn.Error).Fields, tc.field)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.variant, toast.Variant)
			require.Equal(t, tc.title, toast.Title)
			require.Equal(t, tc.ttl, toast.TTLms)
			require.Equal(t, "alice", toast.Sender)
			require.Equal(t, "operator", toast.Role)
			require.Equal(t, now.UTC(), toast.CreatedAt)
			require.NotEmpty(t, toast.ID)
		})
	}
}

func TestBuildNormalizesLineBreaksAndTarget(t *testing.T) {
	t.Parallel()
	toast, err := notify.Build(notify.Input{Message: ptr("a\r\nb"), Username: ptr(" Bob ")}, "alice", "admin", time.Now())
	require.NoError(t, err)
	require.Equal(t, "a\nb", toast.Message)
	require.Equal(t, "bob", *toast.Username)
}
