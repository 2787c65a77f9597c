package backup

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/db"
)

// ScheduleSettings are the scheduled automatic backups' settings
// (docs/architecture.md "Scheduled backups").
type ScheduleSettings struct {
	Enabled bool `json:"enabled"`
	// Directory receives the encrypted exports (absolute path on the
	// Engine's host; made 0700 when missing).
	Directory string `json:"directory"`
	// IntervalHours is how often a backup is written (1 to 168).
	IntervalHours int `json:"interval_hours"`
	// KeepDaily, KeepWeekly and KeepMonthly keep the newest backup of each
	// of the last N days, ISO weeks and months that have one.
	KeepDaily   int       `json:"keep_daily"`
	KeepWeekly  int       `json:"keep_weekly"`
	KeepMonthly int       `json:"keep_monthly"`
	UpdatedBy   string    `json:"updated_by"`
	UpdatedAt   time.Time `json:"updated_at"`
}

// Validate checks the settings as an operator sent them.
func (s ScheduleSettings) Validate() error {
	var v cairn.Validation
	if s.Enabled && s.Directory == "" {
		v.Add("directory", "is required when scheduled backups are enabled")
	}
	if s.Directory != "" && (!filepath.IsAbs(s.Directory) || filepath.Clean(s.Directory) != s.Directory || strings.ContainsRune(s.Directory, 0)) {
		v.Add("directory", "must be a clean absolute path")
	}
	if s.IntervalHours < 1 || s.IntervalHours > 168 {
		v.Add("interval_hours", "must be from 1 to 168")
	}
	for _, f := range []struct {
		name     string
		n, limit int
	}{{"keep_daily", s.KeepDaily, 366}, {"keep_weekly", s.KeepWeekly, 260}, {"keep_monthly", s.KeepMonthly, 240}} {
		if f.n < 0 || f.n > f.limit {
			v.Add(f.name, fmt.Sprintf("must be from 0 to %d", f.limit))
		}
	}
	if s.Enabled && s.KeepDaily+s.KeepWeekly+s.KeepMonthly == 0 {
		v.Add("keep_daily", "keep at least one backup: set keep_daily, keep_weekly or keep_monthly")
	}
	return v.Err()
}

// Schedule returns the settings (the defaults when never saved).
func (s *Service) Schedule(ctx context.Context) (ScheduleSettings, error) {
	r, err := s.store.BackupScheduleGet(ctx)
	if err != nil {
		return ScheduleSettings{}, err
	}
	return ScheduleSettings{Enabled: r.Enabled, Directory: r.Directory, IntervalHours: int(r.IntervalHours), KeepDaily: int(r.KeepDaily),
		KeepWeekly: int(r.KeepWeekly), KeepMonthly: int(r.KeepMonthly), UpdatedBy: r.UpdatedBy, UpdatedAt: r.UpdatedAt}, nil
}

// SetSchedule validates and saves the settings. An enabled schedule's
// directory must be writable by the Engine now (a file is written and
// removed), so a typo is refused rather than found by the first run.
func (s *Service) SetSchedule(ctx context.Context, in ScheduleSettings, by string) (ScheduleSettings, error) {
	if err := in.Validate(); err != nil {
		return ScheduleSettings{}, err
	}
	if in.Enabled {
		if err := probeDir(in.Directory); err != nil {
			return ScheduleSettings{}, cairn.Invalid("directory", "cannot be written by the Engine: "+err.Error())
		}
	}
	if err := s.store.BackupScheduleSet(ctx, db.BackupScheduleSetParams{Enabled: in.Enabled, Directory: in.Directory,
		IntervalHours: int32(in.IntervalHours), KeepDaily: int32(in.KeepDaily), KeepWeekly: int32(in.KeepWeekly),
		KeepMonthly: int32(in.KeepMonthly), UpdatedBy: by}); err != nil {
		return ScheduleSettings{}, err
	}
	return s.Schedule(ctx)
}

func probeDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return errors.Unwrap(err)
	}
	f, err := os.CreateTemp(dir, ".cairn-probe-*")
	if err != nil {
		return errors.Unwrap(err)
	}
	name := f.Name()
	f.Close()
	return os.Remove(name)
}

// Scheduled backup files are named by their UTC time.
const (
	filePrefix = "cairn-backup-"
	fileSuffix = ".json"
	fileTime   = "20060102-150405"
)

// FileName names a backup written at t.
func FileName(t time.Time) string { return filePrefix + t.UTC().Format(fileTime) + fileSuffix }

// parseFileName reads the time of a backup file's name.
func parseFileName(name string) (time.Time, bool) {
	rest, ok := strings.CutPrefix(name, filePrefix)
	if !ok {
		return time.Time{}, false
	}
	rest, ok = strings.CutSuffix(rest, fileSuffix)
	if !ok {
		return time.Time{}, false
	}
	t, err := time.Parse(fileTime, rest)
	return t, err == nil
}

// Due reports whether a backup is due at now: none succeeded within the
// interval, less a slack (a quarter of it, at most half an hour) so that
// the hourly check a little early does not skip a whole interval.
func Due(now, lastSuccess time.Time, intervalHours int) bool {
	interval := time.Duration(intervalHours) * time.Hour
	return now.Sub(lastSuccess) >= interval-min(interval/4, 30*time.Minute)
}

// Retain returns which of the backups taken at times to keep: the newest
// of each of the last daily days, weekly ISO weeks and monthly months
// that have a backup (each period counted only when it has one), and the
// newest backup whatever the settings. times may be in any order; the
// answer is indexed as times is.
func Retain(times []time.Time, daily, weekly, monthly int) []bool {
	keep := make([]bool, len(times))
	order := make([]int, len(times))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return times[b].Compare(times[a]) })
	if len(order) > 0 {
		keep[order[0]] = true
	}
	rules := []struct {
		n      int
		period func(time.Time) string
	}{
		{daily, func(t time.Time) string { return t.UTC().Format("2006-01-02") }},
		{weekly, func(t time.Time) string { y, w := t.UTC().ISOWeek(); return fmt.Sprintf("%d-W%02d", y, w) }},
		{monthly, func(t time.Time) string { return t.UTC().Format("2006-01") }},
	}
	for _, r := range rules {
		seen := map[string]bool{}
		for _, i := range order {
			if len(seen) == r.n {
				break
			}
			p := r.period(times[i])
			if !seen[p] {
				seen[p] = true
				keep[i] = true // the newest of its period
			}
		}
	}
	return keep
}

// WriteScheduled exports this Engine into dir as FileName(now), written
// to a temporary file first and renamed once complete and synced, so the
// directory never holds a partial backup under a backup's name. The file
// is 0600: it is encrypted, but it is the Engine's whole configuration.
func (s *Service) WriteScheduled(ctx context.Context, dir string, now time.Time) (name string, size int64, err error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", 0, err
	}
	f, err := os.CreateTemp(dir, ".cairn-backup-*.partial")
	if err != nil {
		return "", 0, err
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
		}
	}()
	if err = f.Chmod(0o600); err != nil {
		return "", 0, err
	}
	if err = s.Export(ctx, f); err != nil {
		return "", 0, err
	}
	if err = f.Sync(); err != nil {
		return "", 0, err
	}
	st, err := f.Stat()
	if err != nil {
		return "", 0, err
	}
	if err = f.Close(); err != nil {
		return "", 0, err
	}
	name = FileName(now)
	if err = os.Rename(tmp, filepath.Join(dir, name)); err != nil {
		return "", 0, err
	}
	return name, st.Size(), nil
}

// Prune deletes the backups in dir that Retain does not keep and returns
// their names. Only files named as scheduled backups are considered.
func Prune(dir string, daily, weekly, monthly int) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var names []string
	var times []time.Time
	for _, e := range ents {
		if t, ok := parseFileName(e.Name()); ok && e.Type().IsRegular() {
			names, times = append(names, e.Name()), append(times, t)
		}
	}
	var pruned []string
	for i, k := range Retain(times, daily, weekly, monthly) {
		if k {
			continue
		}
		if err := os.Remove(filepath.Join(dir, names[i])); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return pruned, err
		}
		pruned = append(pruned, names[i])
	}
	slices.Sort(pruned)
	return pruned, nil
}

// Run kinds of backup_runs.
const RunScheduled = "scheduled"

// Run is one scheduled backup as the Server page shows it.
type Run struct {
	ID         string     `json:"id"`
	Status     string     `json:"status" openapi:"enum=running|succeeded|failed"`
	File       string     `json:"file"`
	SizeBytes  int64      `json:"size_bytes"`
	Pruned     []string   `json:"pruned"`
	Detail     string     `json:"detail"`
	StartedAt  time.Time  `json:"started_at"`
	FinishedAt *time.Time `json:"finished_at,omitempty"`
}

// Runs lists the newest runs of kind (RunScheduled, RunDrill).
func (s *Service) Runs(ctx context.Context, kind string, limit int) ([]Run, error) {
	rows, err := s.store.BackupRunList(ctx, db.BackupRunListParams{Kind: kind, MaxRows: int32(limit)})
	if err != nil {
		return nil, err
	}
	out := make([]Run, len(rows))
	for i, r := range rows {
		pr := r.Pruned
		if pr == nil {
			pr = []string{}
		}
		out[i] = Run{ID: r.ID, Status: r.Status, File: r.File, SizeBytes: r.SizeBytes, Pruned: pr, Detail: r.Detail, StartedAt: r.StartedAt, FinishedAt: r.FinishedAt}
	}
	return out, nil
}

// LastSuccess is when the last scheduled backup succeeded (zero: never).
func (s *Service) LastSuccess(ctx context.Context) (time.Time, error) {
	t, err := s.store.BackupRunLastSuccess(ctx, RunScheduled)
	if err != nil || t.Unix() == 0 {
		return time.Time{}, err
	}
	return t, nil
}

// BeginRun records a scheduled backup starting (idempotent).
func (s *Service) BeginRun(ctx context.Context, id string) error {
	return s.store.BackupRunBegin(ctx, db.BackupRunBeginParams{ID: id, Kind: RunScheduled})
}

// BeginDrill records a restore drill starting (idempotent).
func (s *Service) BeginDrill(ctx context.Context, id string) error {
	return s.store.BackupRunBegin(ctx, db.BackupRunBeginParams{ID: id, Kind: RunDrill})
}

// LastDrill is when the last restore drill started (zero: never).
func (s *Service) LastDrill(ctx context.Context) (time.Time, error) {
	t, err := s.store.BackupRunLastStarted(ctx, RunDrill)
	if err != nil || t.Unix() == 0 {
		return time.Time{}, err
	}
	return t, nil
}

// FinishRun records a run's outcome.
func (s *Service) FinishRun(ctx context.Context, id string, r Run) error {
	if r.Pruned == nil {
		r.Pruned = []string{}
	}
	return s.store.BackupRunFinish(ctx, db.BackupRunFinishParams{ID: id, Status: r.Status, File: r.File, SizeBytes: r.SizeBytes,
		Pruned: r.Pruned, Detail: r.Detail})
}
