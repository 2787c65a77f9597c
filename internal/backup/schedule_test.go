package backup_test

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/internal/backup"
)

func TestRetain(t *testing.T) {
	t.Parallel()
	at := func(s string) time.Time {
		tm, err := time.Parse("2006-01-02 15:04", s)
		require.NoError(t, err)
		return tm
	}
	// Two backups a day from 2026-09-25 (a Friday) to 2026-11-29 (a
	// Sunday), at 03:00 and 15:00.
	var daily []time.Time
	for d := at("2026-09-25 03:00"); !d.After(at("2026-11-29 15:00")); d = d.Add(12 * time.Hour) {
		daily = append(daily, d)
	}
	cases := []struct {
		name                   string
		times                  []time.Time
		daily, weekly, monthly int
		want                   []string
	}{
		{"nothing kept but the newest", daily, 0, 0, 0, []string{"2026-11-29 15:00"}},
		{"three days: the newest of each", daily, 3, 0, 0, []string{"2026-11-27 15:00", "2026-11-28 15:00", "2026-11-29 15:00"}},
		{"two ISO weeks: the newest of each (Sunday ends a week)", daily, 0, 2, 0, []string{"2026-11-22 15:00", "2026-11-29 15:00"}},
		{"three months", daily, 0, 0, 3, []string{"2026-09-30 15:00", "2026-10-31 15:00", "2026-11-29 15:00"}},
		{"rules overlap: union", daily, 2, 2, 2, []string{"2026-10-31 15:00", "2026-11-22 15:00", "2026-11-28 15:00", "2026-11-29 15:00"}},
		{"more periods asked than exist keeps one per period", []time.Time{at("2026-11-01 01:00"), at("2026-11-01 02:00"), at("2026-11-03 01:00")}, 30, 0, 0,
			[]string{"2026-11-01 02:00", "2026-11-03 01:00"}},
		{"periods without backups are not counted", []time.Time{at("2026-01-01 00:00"), at("2026-06-01 00:00"), at("2026-11-01 00:00")}, 2, 0, 0,
			[]string{"2026-06-01 00:00", "2026-11-01 00:00"}},
		{"order of the input does not matter", []time.Time{at("2026-11-03 01:00"), at("2026-11-01 01:00"), at("2026-11-01 02:00")}, 1, 0, 0,
			[]string{"2026-11-03 01:00"}},
		{"none", nil, 7, 4, 12, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			keep := backup.Retain(c.times, c.daily, c.weekly, c.monthly)
			require.Len(t, keep, len(c.times))
			var got []string
			for i, k := range keep {
				if k {
					got = append(got, c.times[i].Format("2006-01-02 15:04"))
				}
			}
			slices.Sort(got)
			require.Equal(t, c.want, got)
		})
	}
}

func TestDue(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 29, 6, 0, 0, 0, time.UTC)
	cases := []struct {
		last     time.Time
		interval int
		want     bool
	}{
		{time.Time{}, 24, true},
		{now.Add(-24 * time.Hour), 24, true},
		{now.Add(-23*time.Hour - 30*time.Minute), 24, true},
		{now.Add(-23 * time.Hour), 24, false},
		{now.Add(-40 * time.Minute), 1, false},
		{now.Add(-50 * time.Minute), 1, true},
	}
	for _, c := range cases {
		require.Equal(t, c.want, backup.Due(now, c.last, c.interval), "%v %d", c.last, c.interval)
	}
}

func TestScheduleSettingsValidate(t *testing.T) {
	t.Parallel()
	ok := backup.ScheduleSettings{Enabled: true, Directory: "/var/backups/cairn", IntervalHours: 24, KeepDaily: 7, KeepWeekly: 4, KeepMonthly: 12}
	require.NoError(t, ok.Validate())
	require.NoError(t, backup.ScheduleSettings{IntervalHours: 24}.Validate(), "disabled needs no directory")
	cases := []struct {
		field string
		edit  func(*backup.ScheduleSettings)
	}{
		{"directory", func(s *backup.ScheduleSettings) { s.Directory = "" }},
		{"directory", func(s *backup.ScheduleSettings) { s.Directory = "relative/dir" }},
		{"directory", func(s *backup.ScheduleSettings) { s.Directory = "/var/../etc" }},
		{"interval_hours", func(s *backup.ScheduleSettings) { s.IntervalHours = 0 }},
		{"interval_hours", func(s *backup.ScheduleSettings) { s.IntervalHours = 169 }},
		{"keep_daily", func(s *backup.ScheduleSettings) { s.KeepDaily = -1 }},
		{"keep_weekly", func(s *backup.ScheduleSettings) { s.KeepWeekly = 261 }},
		{"keep_monthly", func(s *backup.ScheduleSettings) { s.KeepMonthly = 241 }},
		{"keep_daily", func(s *backup.ScheduleSettings) { s.KeepDaily, s.KeepWeekly, s.KeepMonthly = 0, 0, 0 }},
	}
	for _, c := range cases {
		s := ok
		c.edit(&s)
		var e *cairn.Error
		require.ErrorAs(t, s.Validate(), &e, c.field)
		require.Contains(t, e.Fields, c.field)
	}
}

func TestPruneDeletesOnlyWhatRetainDrops(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	base := time.Date(2026, 11, 20, 3, 0, 0, 0, time.UTC)
	for d := range 10 {
		require.NoError(t, os.WriteFile(filepath.Join(dir, backup.FileName(base.AddDate(0, 0, d))), []byte("x"), 0o600))
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("mine"), 0o600))
	pruned, err := backup.Prune(dir, 3, 0, 0)
	require.NoError(t, err)
	require.Len(t, pruned, 7)
	left, err := os.ReadDir(dir)
	require.NoError(t, err)
	var names []string
	for _, e := range left {
		names = append(names, e.Name())
	}
	require.Equal(t, []string{backup.FileName(base.AddDate(0, 0, 7)), backup.FileName(base.AddDate(0, 0, 8)), backup.FileName(base.AddDate(0, 0, 9)), "notes.txt"}, names)
}
