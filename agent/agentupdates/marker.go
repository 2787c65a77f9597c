package agentupdates

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"runtime"
	"time"

	"github.com/cairn-rmm/cairn/agent/proto"
)

// Marker states.
const (
	// StateInstalled: the new build is in place and must check in.
	StateInstalled = "installed"
	// StateRolledBack: the new build did not check in and the previous
	// one is back; it reports the rollback.
	StateRolledBack = "rolled_back"
)

// Marker is the pending-update file <exe>.update.json: what the next
// process started from <exe> must finish or report.
type Marker struct {
	OperationID string    `json:"operation_id"`
	ArtifactID  string    `json:"artifact_id"`
	FromBuildID string    `json:"from_build_id"`
	ToBuildID   string    `json:"to_build_id"`
	State       string    `json:"state"`
	Deadline    time.Time `json:"deadline"`
	Message     string    `json:"message,omitempty"`
	// Pending are progress events the previous process could not post.
	Pending []pending `json:"pending,omitempty"`
}

// MarkerPath is where the marker of the executable exe lives.
func MarkerPath(exe string) string { return exe + ".update.json" }

// PreviousPath is where the binary an update replaced is kept.
func PreviousPath(exe string) string { return exe + ".previous" }

func readMarker(exe string) (*Marker, error) {
	b, err := os.ReadFile(MarkerPath(exe))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var m Marker
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("update marker %s: %w", MarkerPath(exe), err)
	}
	return &m, nil
}

// writeMarker writes the marker atomically (temp file, fsync, rename).
func writeMarker(exe string, m Marker) error {
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	path := MarkerPath(exe)
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("write the update marker: %w", err)
	}
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write the update marker: %w", err)
	}
	return nil
}

func removeMarker(exe string) { _ = os.Remove(MarkerPath(exe)) }

// replace puts the verified file next in place of exe and keeps exe as
// <exe>.previous. On Unix the running file gets a second name (a hard
// link) and the new one is renamed over it: there is never a moment
// without an executable at exe. Windows cannot replace a running
// executable, but can rename it.
func replace(exe, next string) error {
	prev := PreviousPath(exe)
	_ = os.Remove(prev)
	if runtime.GOOS == "windows" {
		if err := os.Rename(exe, prev); err != nil {
			return fmt.Errorf("keep the running binary as %s: %w", prev, err)
		}
		if err := os.Rename(next, exe); err != nil {
			_ = os.Rename(prev, exe)
			return fmt.Errorf("install the new binary: %w", err)
		}
		return nil
	}
	if err := os.Link(exe, prev); err != nil {
		if err := copyFile(exe, prev); err != nil {
			return fmt.Errorf("keep the running binary as %s: %w", prev, err)
		}
	}
	if err := os.Rename(next, exe); err != nil {
		return fmt.Errorf("install the new binary: %w", err)
	}
	return nil
}

// restore puts <exe>.previous back at exe.
func restore(exe string) error {
	prev := PreviousPath(exe)
	if _, err := os.Stat(prev); err != nil {
		return fmt.Errorf("no previous binary to restore: %w", err)
	}
	if runtime.GOOS == "windows" {
		failed := exe + ".failed"
		_ = os.Remove(failed)
		if err := os.Rename(exe, failed); err != nil {
			return err
		}
	}
	return os.Rename(prev, exe)
}

func copyFile(from, to string) error {
	b, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	return os.WriteFile(to, b, 0o755)
}

// prepare reads the marker at start: a marker naming this build means this
// process is the new build and must check in.
func (u *Updater) prepare() {
	m, err := readMarker(u.opts.Exe)
	if err != nil {
		u.log.Warn("unreadable update marker; removing it", "err", err)
		removeMarker(u.opts.Exe)
		return
	}
	u.marker = m
	if m != nil && m.State == StateInstalled && m.ToBuildID == u.opts.BuildID {
		u.checkin = make(chan struct{})
		u.busy.Store(true)
	}
}

// boot finishes what the marker says: a new build checks in (or rolls
// back at the deadline); the previous build reports the rollback.
func (u *Updater) boot(ctx context.Context) {
	m := u.marker
	if m == nil {
		return
	}
	j := job{id: m.OperationID, art: proto.UpdateArtifact{BuildID: m.ToBuildID, ArtifactID: m.ArtifactID}}
	for _, p := range m.Pending {
		u.post.add(p)
	}
	if u.checkin == nil {
		msg := m.Message
		if m.State != StateRolledBack {
			msg = fmt.Sprintf("build %s did not take over; build %s is running", m.ToBuildID, u.opts.BuildID)
		}
		u.event(j, proto.UpdateRolledBack, 100, msg)
		removeMarker(u.opts.Exe)
		return
	}
	u.event(j, proto.UpdateVerifyingCheckin, 95, fmt.Sprintf("build %s started; checking in with the Engine", u.opts.BuildID))
	timer := time.NewTimer(time.Until(m.Deadline))
	defer timer.Stop()
	select {
	case <-ctx.Done():
		// Stopping before the check-in: the next start decides again.
		return
	case <-u.checkin:
		u.event(j, proto.UpdateCompleted, 100, fmt.Sprintf("build %s checked in", u.opts.BuildID))
		removeMarker(u.opts.Exe)
		u.busy.Store(false)
	case <-timer.C:
		u.rollback(ctx, j, *m)
	}
}

// rollback restores the previous binary and restarts into it; the
// marker tells it to report the rollback.
func (u *Updater) rollback(ctx context.Context, j job, m Marker) {
	m.State = StateRolledBack
	m.Message = fmt.Sprintf("build %s did not check in with the Engine by %s; restored build %s",
		m.ToBuildID, m.Deadline.Format(time.RFC3339), m.FromBuildID)
	u.log.Error("agent update: no check-in; rolling back", "operation", m.OperationID, "to", m.FromBuildID)
	if err := writeMarker(u.opts.Exe, m); err != nil {
		u.log.Error("could not record the rollback", "err", err)
	}
	if err := restore(u.opts.Exe); err != nil {
		u.event(j, proto.UpdateFailed, 100, "the new build did not check in and the previous one could not be restored: "+err.Error())
		removeMarker(u.opts.Exe)
		u.busy.Store(false)
		return
	}
	u.restart(ctx)
}
