package backup

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/cairn-rmm/cairn/db"
)

// RunDrill is the kind of a restore drill's backup_runs row.
const RunDrill = "drill"

// DrillInterval is how often the drill runs while scheduled backups are
// enabled.
const DrillInterval = 7 * 24 * time.Hour

// DrillReport is what a restore drill checked.
type DrillReport struct {
	File string `json:"file"`
	// Tables and Rows are what the restore imported.
	Tables int   `json:"tables"`
	Rows   int64 `json:"rows"`
	// Mismatches are tables whose count in the scratch database differs
	// from the backup's (table: backup n, restored m, counted k).
	Mismatches []string `json:"mismatches"`
	// Violations are foreign keys rows of the scratch database break.
	Violations []db.ForeignKeyViolation `json:"violations"`
}

// Passed reports whether the drill found nothing wrong.
func (r DrillReport) Passed() bool { return len(r.Mismatches) == 0 && len(r.Violations) == 0 }

// NewestBackup names the newest scheduled backup file in dir ("" for
// none).
func NewestBackup(dir string) (string, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return "", err
	}
	newest, at := "", time.Time{}
	for _, e := range ents {
		if t, ok := parseFileName(e.Name()); ok && e.Type().IsRegular() && t.After(at) {
			newest, at = e.Name(), t
		}
	}
	return newest, nil
}

// Drill restores the newest scheduled backup in dir into a scratch
// database on the Engine's PostgreSQL server (never the Engine's own),
// checks that every table holds the rows the backup has and that every
// foreign key holds, and drops the scratch database. An error is a drill
// that could not run (no backup, no CREATEDB, a file this Engine's cipher
// cannot open); a report with mismatches or violations is one that ran
// and failed.
func (s *Service) Drill(ctx context.Context, dir string) (DrillReport, error) {
	name, err := NewestBackup(dir)
	if err != nil {
		return DrillReport{}, err
	}
	if name == "" {
		return DrillReport{}, fmt.Errorf("no scheduled backup in %s yet", dir)
	}
	rep := DrillReport{File: name, Mismatches: []string{}, Violations: []db.ForeignKeyViolation{}}
	f, err := os.Open(filepath.Join(dir, name))
	if err != nil {
		return rep, err
	}
	opened, err := s.Open(f, "")
	f.Close()
	if err != nil {
		return rep, fmt.Errorf("open %s: %w", name, err)
	}
	// A drill that died before its drop left its database: drop it now.
	if left, err := s.store.ScratchLeftovers(ctx); err == nil {
		for _, l := range left {
			_ = s.store.DropScratch(ctx, l)
		}
	}
	scratchName := s.store.ScratchPrefixOf() + newID()
	scratch, err := s.store.OpenScratch(ctx, scratchName)
	defer func() {
		if scratch != nil {
			scratch.Close()
		}
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		_ = s.store.DropScratch(dctx, scratchName)
	}()
	if err != nil {
		return rep, err
	}
	into := New(scratch, s.cipher, s.now)
	id, report, err := into.Stage(ctx, opened, "restore-drill")
	if err != nil {
		return rep, fmt.Errorf("stage %s: %w", name, err)
	}
	res, err := into.Apply(ctx, id)
	if err != nil {
		return rep, fmt.Errorf("restore %s: %w", name, err)
	}
	for _, t := range report.Tables {
		counted, err := scratch.BackupCount(ctx, t.Name)
		if err != nil {
			return rep, err
		}
		rep.Tables++
		rep.Rows += res.Rows[t.Name]
		if counted != t.Rows || res.Rows[t.Name] != t.Rows {
			rep.Mismatches = append(rep.Mismatches, fmt.Sprintf("%s: backup %d, restored %d, counted %d", t.Name, t.Rows, res.Rows[t.Name], counted))
		}
	}
	slices.Sort(rep.Mismatches)
	if rep.Violations, err = scratch.BackupForeignKeyViolations(ctx); err != nil {
		return rep, err
	}
	if rep.Violations == nil {
		rep.Violations = []db.ForeignKeyViolation{}
	}
	return rep, nil
}

// DrillSummary is a drill's outcome in one line.
func DrillSummary(rep DrillReport, err error) (status, detail string) {
	if err != nil {
		return "failed", "the drill could not run: " + err.Error()
	}
	if rep.Passed() {
		return "succeeded", fmt.Sprintf("passed: %s restored into a scratch database, %d tables, %d rows, counts and foreign keys hold", rep.File, rep.Tables, rep.Rows)
	}
	var parts []string
	parts = append(parts, rep.Mismatches...)
	for _, v := range rep.Violations {
		parts = append(parts, fmt.Sprintf("%s.%s: %d rows break it", v.Table, v.Constraint, v.Rows))
	}
	return "failed", "failed: " + rep.File + ": " + strings.Join(parts, "; ")
}

// DrillDue reports whether a drill is due: scheduled backups are enabled
// and no drill ran (whatever its outcome) within DrillInterval.
func DrillDue(now, lastDrill time.Time, s ScheduleSettings) bool {
	return s.Enabled && now.Sub(lastDrill) >= DrillInterval-30*time.Minute
}

// ErrNoDirectory: scheduled backups have no directory.
var ErrNoDirectory = errors.New("no backup directory is configured")
