package devicetrust

// Cloned agents (docs/architecture.md "Device identity and clones"). A
// device is its key and its GUID. When the same key and GUID run on two
// machines (an installed agent copied with its disk image), the copy that
// is not the device's current holder is answered device_cloned with a
// one-time clone ticket; it makes a new key and enrolls with the ticket
// into the original's site without an administrator, and the device it
// becomes records cloned_from. The original keeps its GUID, tokens and
// history.

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/db"
	"github.com/cairn-rmm/cairn/internal/ratelimit"
)

// ECodeDeviceCloned tells an agent that it is a copy of an enrolled
// device: it must make a new key and enroll with the clone ticket the
// answer carries (in fields.clone_ticket).
const ECodeDeviceCloned = "device_cloned"

// CloneTicketField is the error field that carries the clone ticket.
const CloneTicketField = "clone_ticket"

// Audit-trail actions an administrator sees.
const (
	AuditCloneDetected = "device_clone_detected"
	AuditCloneEnrolled = "device_clone_enrolled"
)

// Reasons a copy was told to enroll again.
const (
	CloneReasonSocket  = "two_live_sockets"
	CloneReasonRefresh = "refresh_token_fork"
)

// CloneTicketTTL is how long a clone ticket can be spent: long enough for
// a copy that was told and then lost its network to come back.
const CloneTicketTTL = 24 * time.Hour

// ClonesPerDevice bounds the clone tickets issued for one original device:
// a VDI pool made from an image with an enrolled agent is a few hundred
// copies, and every one of them must get its ticket.
var ClonesPerDevice = ratelimit.Rule{Limit: 500, Window: time.Hour}

// CloneTicketPrefix starts every clone ticket (enrollment codes never
// start with it).
const CloneTicketPrefix = "clt_"

// Clone is a detected copy of a device.
type Clone struct {
	Device cairn.DeviceGUID
	SiteID cairn.SiteID
	// BootID is the copy's boot ID; Reason is one of the CloneReason*.
	BootID, Reason string
	// Detail is for the audit trail (what told the two copies apart).
	Detail string
}

// IssueClone records the copy in the audit trail, issues its one-time
// ticket and returns the device_cloned refusal carrying it. Tickets per
// original device are rate limited (ClonesPerDevice).
func IssueClone(ctx context.Context, store *db.Store, c Clone, now time.Time) error {
	if err := ratelimit.New(store.Queries).Hit(ctx, "clone-ticket:"+string(c.Device), ClonesPerDevice); err != nil {
		return err
	}
	ticket := CloneTicketPrefix + randomToken(24)
	err := store.InTx(ctx, func(q *db.Queries) error {
		// Tickets never spent go once expired; issuing is rare enough to
		// carry that sweep.
		if _, err := q.CloneTicketDeleteExpired(ctx, now); err != nil {
			return err
		}
		if err := q.CloneTicketInsert(ctx, db.CloneTicketInsertParams{
			TicketHash: HashCloneTicket(ticket), DeviceGuid: c.Device, SiteID: c.SiteID, BootID: c.BootID, Reason: c.Reason,
			ExpiresAt: now.Add(CloneTicketTTL),
		}); err != nil {
			return err
		}
		return q.AuditInsert(ctx, db.AuditInsertParams{
			Username: "device:" + string(c.Device), Role: "device", Action: AuditCloneDetected,
			Target: fmt.Sprintf("guid=%s reason=%s boot_id=%s %s", c.Device, c.Reason, c.BootID, c.Detail),
			Status: 409, Outcome: "alert",
		})
	})
	if err != nil {
		return err
	}
	return &cairn.Error{Code: ECodeDeviceCloned,
		Message: "this agent is a copy of an enrolled device; it must make a new key and enroll with the clone ticket",
		Fields:  map[string]string{CloneTicketField: ticket}}
}

// CloneTicketOf returns the clone ticket a device_cloned refusal carries.
func CloneTicketOf(err error) string {
	var e *cairn.Error
	if errors.As(err, &e) && e.Code == ECodeDeviceCloned {
		return e.Fields[CloneTicketField]
	}
	return ""
}

// HashCloneTicket is how a ticket is stored.
func HashCloneTicket(ticket string) []byte { return hashToken(ticket) }
