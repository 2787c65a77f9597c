package scheduledjobs

import (
	"context"
	"time"

	"github.com/cairn-rmm/cairn"

	"github.com/cairn-rmm/cairn/db"
)

// Site-worker scheduled lane (SPEC "Limits"): each active scheduled job
// run, workflow run, agent-maintenance item and Ansible playbook batch
// holds one slot of every site it touches while it runs, at most Capacity
// per site. Interactive
// operations (the console's device operations, shells) never take a slot,
// so however much bulk work is queued, they find their site worker free.
// Slots are rows with a lease so a holder that died frees its slot when
// the lease ends; holders renew nothing: the lease is the item's longest
// possible run.

// Slot kinds.
const (
	SlotScheduledJob     = "scheduled_job"
	SlotWorkflow         = "workflow"
	SlotAgentMaintenance = "agent_maintenance"
	// SlotAnsible: a playbook run's batch, one slot per site it touches
	// (a one-target run: one slot).
	SlotAnsible = "ansible"
	// SlotPatchInstall: a patch_install job's fire, one slot per site of
	// its targets while any of its installs is open.
	SlotPatchInstall = "patch_install"
)

// DefaultScheduledCapacity is the slots per site worker when the
// deployment sets none (CAIRN_SITE_SCHEDULED_CAPACITY).
const DefaultScheduledCapacity = 4

// OnboardingCapacity is reported for the onboarding lane: enrollment
// approvals run on the Engine queue and never wait for a scheduled slot;
// 0 says that lane is not slot-bounded.
const OnboardingCapacity = 0

// Slots hands out lane slots.
type Slots struct {
	store *db.Store
	// Capacity is the slots per site; Onboarding the onboarding lane's.
	Capacity   int
	Onboarding int
}

// NewSlots returns the lane with capacity slots per site (<= 0: default).
func NewSlots(store *db.Store, capacity int) *Slots {
	if capacity <= 0 {
		capacity = DefaultScheduledCapacity
	}
	return &Slots{store: store, Capacity: capacity, Onboarding: OnboardingCapacity}
}

// Acquire takes a slot of site for holder (idempotent: a holder that has
// one keeps it, with its lease extended) and reports whether it got one.
// The site row is locked so concurrent acquirers count one after another.
func (l *Slots) Acquire(ctx context.Context, site int64, holder, kind string, lease time.Duration) (bool, error) {
	got := false
	err := l.store.InTx(ctx, func(q *db.Queries) error {
		if _, err := q.SiteSlotLockSite(ctx, cairn.SiteID(site)); err != nil {
			if db.IsNoRows(err) {
				got = true // the site went away: nothing to hold
				return nil
			}
			return err
		}
		if err := q.SiteSlotDeleteExpired(ctx, cairn.SiteID(site)); err != nil {
			return err
		}
		held, err := q.SiteSlotHeld(ctx, db.SiteSlotHeldParams{SiteID: cairn.SiteID(site), Holder: holder})
		if err != nil {
			return err
		}
		if !held {
			n, err := q.SiteSlotCount(ctx, cairn.SiteID(site))
			if err != nil {
				return err
			}
			if int(n) >= l.Capacity {
				return nil
			}
		}
		got = true
		return q.SiteSlotInsert(ctx, db.SiteSlotInsertParams{SiteID: cairn.SiteID(site), Holder: holder, Kind: kind,
			LeaseSeconds: lease.Seconds()})
	})
	return got, err
}

// Release frees every slot holder holds.
func (l *Slots) Release(ctx context.Context, holder string) error {
	return l.store.SiteSlotRelease(ctx, holder)
}

// SiteLoad is one site's lane.
type SiteLoad struct {
	SiteID      cairn.SiteID
	Slug        string
	Capacity    int
	ActiveItems int
	Onboarding  int
}

// Load reports every site's lane.
func (l *Slots) Load(ctx context.Context) ([]SiteLoad, error) {
	rows, err := l.store.SiteSlotCounts(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]SiteLoad, len(rows))
	for i, r := range rows {
		out[i] = SiteLoad{SiteID: r.SiteID, Slug: r.Slug, Capacity: l.Capacity, ActiveItems: int(r.ActiveItems), Onboarding: l.Onboarding}
	}
	return out, nil
}
