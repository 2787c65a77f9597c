package enrollment

// Enrollment of a cloned agent with its clone ticket (docs/architecture.md
// "Device identity and clones").

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/db"
	"github.com/cairn-rmm/cairn/internal/devicetrust"
)

// requestClone records the request of a copy that was told device_cloned:
// approved at once into the original's site, because the original was
// approved. The ticket is spent on it, so it enrolls one key once.
func (s *Service) requestClone(ctx context.Context, req proto.EnrollRequest, pub ed25519.PublicKey, jkt, remoteAddr string,
	readmission bool, now time.Time) (db.DeviceApproval, error) {
	if readmission {
		// A copy makes a new key; a known key here is not a copy's.
		return db.DeviceApproval{}, cairn.Invalid("public_key", "must be a new key: a clone enrolls with a key of its own")
	}
	var row db.DeviceApproval
	err := s.store.InTx(ctx, func(q *db.Queries) error {
		id := uuid.NewString()
		by := "clone-ticket"
		var err error
		// The ticket names the site; the approval is inserted first so the
		// ticket can point at it.
		var siteID cairn.SiteID
		t, err := q.CloneTicketPeek(ctx, devicetrust.HashCloneTicket(req.CloneTicket))
		if err == nil && t.UsedAt == nil && t.ExpiresAt.After(now) {
			siteID = t.SiteID
		} else if err != nil && !db.IsNoRows(err) {
			return err
		} else {
			return cairn.Invalid("clone_ticket", "is unknown, expired or used")
		}
		row, err = q.ApprovalInsert(ctx, db.ApprovalInsertParams{
			ID: id, SiteID: siteID, Hostname: req.Hostname, OperatingSystem: req.OS, AgentVersion: req.AgentVersion,
			Fingerprint: req.Fingerprint, PublicKey: pub, Jkt: jkt, RemoteAddr: remoteAddr, Status: proto.ApprovalApproved,
			AutoApproved: true, DecidedAt: &now, DecidedBy: &by, ExpiresAt: now.Add(s.cfg.ApprovalTTL),
		})
		if err != nil {
			return err
		}
		if _, err := q.CloneTicketConsume(ctx, db.CloneTicketConsumeParams{
			Now: &now, ApprovalID: &id, TicketHash: devicetrust.HashCloneTicket(req.CloneTicket),
		}); db.IsNoRows(err) {
			return cairn.Invalid("clone_ticket", "is unknown, expired or used")
		} else if err != nil {
			return err
		}
		return nil
	})
	return row, err
}

// enrollClone makes the copy's device: new GUID and agent ID, the
// original recorded in cloned_from, nothing of the original's inventory
// or history. Copies of a machine carry its hostname; when another device
// has it, the copy's device gets a suffixed one until the machine is
// renamed.
func (s *Service) enrollClone(ctx context.Context, q *db.Queries, a db.DeviceApproval, t db.DeviceCloneTicket, now time.Time) (db.Device, bool, error) {
	guid := cairn.DeviceGUID(uuid.NewString())
	hostname := a.Hostname
	if owner, err := q.DeviceHostnameOwner(ctx, hostname); err == nil && owner.Jkt != a.Jkt {
		b := make([]byte, 3)
		_, _ = rand.Read(b)
		hostname = fmt.Sprintf("%.*s-clone-%s", maxHostname-13, a.Hostname, hex.EncodeToString(b))
	} else if err != nil && !db.IsNoRows(err) {
		return db.Device{}, false, err
	}
	d, err := q.DeviceEnrollInsert(ctx, db.DeviceEnrollInsertParams{
		Guid: guid, Hostname: hostname, SiteID: a.SiteID, AgentID: newAgentID(),
		OperatingSystem: a.OperatingSystem, PublicKey: a.PublicKey, Jkt: a.Jkt, Fingerprint: a.Fingerprint,
		TokenVersion: 1, AgentVersion: a.AgentVersion, Now: now,
	})
	if db.IsUniqueViolation(err, "") {
		return db.Device{}, false, cairn.Errorf(cairn.ECodeConflict, "another device is enrolled as %q; poll again", hostname)
	}
	if err != nil {
		return db.Device{}, false, err
	}
	orig := t.DeviceGuid
	if err := q.DeviceSetClonedFrom(ctx, db.DeviceSetClonedFromParams{ClonedFrom: &orig, Guid: guid}); err != nil {
		return db.Device{}, false, err
	}
	d.ClonedFrom = &orig
	err = q.AuditInsert(ctx, db.AuditInsertParams{
		Username: "device:" + string(guid), Role: "device", Action: devicetrust.AuditCloneEnrolled,
		Target: fmt.Sprintf("guid=%s cloned_from=%s hostname=%s reason=%s", guid, orig, hostname, t.Reason),
		Status: 200, Outcome: "success",
	})
	return d, false, err
}
