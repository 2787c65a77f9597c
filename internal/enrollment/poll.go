package enrollment

import (
	"context"
	"errors"
	"time"

	"github.com/google/uuid"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/db"
	"github.com/cairn-rmm/cairn/internal/devicetrust"
)

// Enrolled is what a successful poll produced, for the caller to record
// (activity history, events).
type Enrolled struct {
	Device   db.Device
	SiteSlug string
	// Recreated says a purged device came back under its old GUID.
	Recreated bool
}

// Poll answers an agent waiting for its decision. jkt is the thumbprint of
// the key that signed the poll's DPoP proof: only the key that made the
// request may collect its tokens, and anyone else learns nothing (404).
// An approved request becomes a device (SPEC "Enrollment" approved ->
// enrolled); polling an enrolled request again with the same key hands out
// a fresh pair and revokes the earlier one, so an agent that crashed
// before saving its tokens is not stranded.
func (s *Service) Poll(ctx context.Context, tokens *devicetrust.Tokens, approvalID, jkt string) (proto.EnrollPollResponse, *Enrolled, error) {
	a, err := s.store.ApprovalGet(ctx, approvalID)
	if err != nil || a.Jkt != jkt {
		return proto.EnrollPollResponse{}, nil, cairn.Errorf(cairn.ECodeNotFound, "approval %s not found", approvalID)
	}
	now := s.now()
	status := effectiveStatus(a, now)
	switch status {
	case proto.ApprovalPending:
		return proto.EnrollPollResponse{Status: status, PollAfterSeconds: int(s.cfg.PollAfter.Seconds())}, nil, nil
	case proto.ApprovalDenied, proto.ApprovalExpired:
		return proto.EnrollPollResponse{Status: status}, nil, nil
	case proto.ApprovalEnrolled:
		if !a.ExpiresAt.After(now) {
			return proto.EnrollPollResponse{}, nil, cairn.Errorf(cairn.ECodeConflict, "approval %s was used and has expired; request enrollment again", approvalID)
		}
	}

	var (
		out  proto.EnrollPollResponse
		done Enrolled
	)
	err = s.store.InTx(ctx, func(q *db.Queries) error {
		var d db.Device
		var err error
		if status == proto.ApprovalEnrolled {
			d, err = s.reissue(ctx, q, a)
		} else {
			d, done.Recreated, err = s.enroll(ctx, q, a, now)
		}
		if err != nil {
			return err
		}
		if err := q.RefreshTokenRevokeDevice(ctx, db.RefreshTokenRevokeDeviceParams{DeviceGuid: d.Guid, Now: &now}); err != nil {
			return err
		}
		issued, err := tokens.Issue(ctx, q, d)
		if err != nil {
			return err
		}
		if err := q.ApprovalMarkEnrolled(ctx, db.ApprovalMarkEnrolledParams{ID: a.ID, DeviceGuid: &d.Guid}); err != nil {
			return err
		}
		site, err := q.SiteGet(ctx, d.SiteID)
		if err != nil {
			return err
		}
		done.Device, done.SiteSlug = d, site.Slug
		out = proto.EnrollPollResponse{
			Status: proto.ApprovalEnrolled,
			Device: &proto.EnrolledDevice{GUID: string(d.Guid), AgentID: d.AgentID, SiteID: int64(d.SiteID), SiteSlug: site.Slug, Hostname: d.Hostname},
			Tokens: ptr(tokens.Wire(issued)),
		}
		return nil
	})
	if errors.Is(err, errNeedsAdmin) {
		// The approval no longer suffices: withdraw it, so the agent's
		// next request starts one only an administrator can approve.
		if err := s.store.ApprovalExpireApproved(ctx, a.ID); err != nil {
			return proto.EnrollPollResponse{}, nil, err
		}
		return proto.EnrollPollResponse{Status: proto.ApprovalExpired}, nil, nil
	}
	if err != nil {
		return proto.EnrollPollResponse{}, nil, err
	}
	return out, &done, nil
}

// errNeedsAdmin: the approved request's key belongs to a revoked,
// quarantined or purged device, and no administrator approved it.
var errNeedsAdmin = errors.New("enrollment: readmission needs an administrator's approval")

// enroll turns an approved request into a device: a new one, the same
// device enrolling again (same key: revoked or re-homed), or a purged one
// coming back under its old GUID with a token version above the purged one.
func (s *Service) enroll(ctx context.Context, q *db.Queries, a db.DeviceApproval, now time.Time) (db.Device, bool, error) {
	ticket, err := q.CloneTicketByApproval(ctx, &a.ID)
	if err != nil && !db.IsNoRows(err) {
		return db.Device{}, false, err
	}
	if err == nil {
		return s.enrollClone(ctx, q, a, ticket, now)
	}
	if owner, err := q.DeviceHostnameOwner(ctx, a.Hostname); err == nil && owner.Jkt != a.Jkt {
		return db.Device{}, false, cairn.Errorf(cairn.ECodeConflict,
			"another device is enrolled as %q; purge it or enroll this one under another hostname", a.Hostname)
	} else if err != nil && !db.IsNoRows(err) {
		return db.Device{}, false, err
	}
	if existing, err := q.DeviceGetByJKT(ctx, a.Jkt); err == nil {
		// Checked on the same read the conditional update below starts
		// from, so a revoke racing this poll cannot slip in between.
		if existing.TrustState != devicetrust.TrustActive && !a.AdminApproved {
			return db.Device{}, false, errNeedsAdmin
		}
		d, err := q.DeviceReenroll(ctx, db.DeviceReenrollParams{
			Guid: existing.Guid, Hostname: a.Hostname, SiteID: a.SiteID, OperatingSystem: a.OperatingSystem,
			Fingerprint: a.Fingerprint, AgentVersion: a.AgentVersion, Now: now,
			FromState: existing.TrustState, FromVersion: existing.TokenVersion,
		})
		if db.IsNoRows(err) {
			return db.Device{}, false, cairn.Errorf(cairn.ECodeConflict, "%s changed while enrolling; poll again", a.Hostname)
		}
		return d, false, err
	} else if !db.IsNoRows(err) {
		return db.Device{}, false, err
	}
	p := db.DeviceEnrollInsertParams{
		Guid: cairn.DeviceGUID(uuid.NewString()), Hostname: a.Hostname, SiteID: a.SiteID, AgentID: newAgentID(),
		OperatingSystem: a.OperatingSystem, PublicKey: a.PublicKey, Jkt: a.Jkt, Fingerprint: a.Fingerprint,
		TokenVersion: 1, AgentVersion: a.AgentVersion, Now: now,
	}
	recreated := false
	if barrier, err := q.DevicePurgeGetByJKT(ctx, a.Jkt); err == nil {
		if !a.AdminApproved {
			return db.Device{}, false, errNeedsAdmin
		}
		p.Guid, p.TokenVersion, recreated = barrier.Guid, barrier.TokenVersion+1, true
		n, err := q.DevicePurgeDelete(ctx, barrier.Guid)
		if err != nil {
			return db.Device{}, false, err
		}
		if n == 0 {
			return db.Device{}, false, cairn.Errorf(cairn.ECodeConflict, "%s was re-enrolled concurrently; poll again", a.Hostname)
		}
	} else if !db.IsNoRows(err) {
		return db.Device{}, false, err
	}
	d, err := q.DeviceEnrollInsert(ctx, p)
	if db.IsUniqueViolation(err, "") {
		return db.Device{}, false, cairn.Errorf(cairn.ECodeConflict, "another device is enrolled as %q", a.Hostname)
	}
	return d, recreated, err
}

// reissue finds the device an enrolled request made, still bound to the
// same key and not blocked.
func (s *Service) reissue(ctx context.Context, q *db.Queries, a db.DeviceApproval) (db.Device, error) {
	if a.DeviceGuid == nil {
		return db.Device{}, cairn.Errorf(cairn.ECodeConflict, "approval %s has no device", a.ID)
	}
	d, err := q.DeviceGetByGUID(ctx, *a.DeviceGuid)
	if err != nil || d.Jkt != a.Jkt || d.TrustState != devicetrust.TrustActive {
		return db.Device{}, cairn.Errorf(cairn.ECodeConflict, "approval %s was used; request enrollment again", a.ID)
	}
	return db.Device{
		Guid: d.Guid, Hostname: d.Hostname, SiteID: d.SiteID, AgentID: d.AgentID, Jkt: d.Jkt, TokenVersion: d.TokenVersion,
	}, nil
}

func ptr[T any](v T) *T { return &v }
