package scheduledjobs_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/internal/scheduledjobs"
)

func TestNextRuns(t *testing.T) {
	t.Parallel()
	from := time.Date(2026, 3, 28, 12, 0, 30, 0, time.UTC) // the day before Berlin's spring DST change
	at := time.Date(2026, 4, 1, 8, 0, 0, 0, time.UTC)
	cases := []struct {
		name string
		s    scheduledjobs.Schedule
		want []string
	}{
		{"every minute", scheduledjobs.Schedule{Type: "cron", Expression: "* * * * *", Timezone: "UTC"},
			[]string{"2026-03-28T12:01:00Z", "2026-03-28T12:02:00Z", "2026-03-28T12:03:00Z"}},
		{"09:00 Berlin across DST", scheduledjobs.Schedule{Type: "cron", Expression: "0 9 * * *", Timezone: "Europe/Berlin"},
			[]string{"2026-03-29T07:00:00Z", "2026-03-30T07:00:00Z", "2026-03-31T07:00:00Z"}},
		{"daily descriptor", scheduledjobs.Schedule{Type: "cron", Expression: "@daily", Timezone: "UTC"},
			[]string{"2026-03-29T00:00:00Z", "2026-03-30T00:00:00Z", "2026-03-31T00:00:00Z"}},
		{"interval aligned to the epoch", scheduledjobs.Schedule{Type: "interval", EverySeconds: 3600},
			[]string{"2026-03-28T13:00:00Z", "2026-03-28T14:00:00Z", "2026-03-28T15:00:00Z"}},
		{"once", scheduledjobs.Schedule{Type: "once", At: &at}, []string{"2026-04-01T08:00:00Z"}},
		{"manual", scheduledjobs.Schedule{Type: "manual"}, nil},
	}
	for _, c := range cases {
		var got []string
		for _, t := range c.s.NextRuns(from, 3) {
			got = append(got, t.Format(time.RFC3339))
		}
		require.Equal(t, c.want, got, c.name)
	}
}

func TestNormalizeKeepsOnlyTheTypesFields(t *testing.T) {
	t.Parallel()
	now := time.Now()
	at := now.Add(time.Hour)
	var v cairn.Validation
	s := scheduledjobs.Schedule{Type: "cron", Expression: "  0   3 * * * ", At: &at, EverySeconds: 60}.Normalize("schedule", now, &v)
	require.NoError(t, v.Err())
	require.Equal(t, scheduledjobs.Schedule{Type: "cron", Expression: "0 3 * * *", Timezone: "UTC"}, s)
}
