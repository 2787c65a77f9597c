// Package onboarding is agent redeploys (issue 27 item 6; SPEC agent
// behaviour 16 on the Engine side): an operator redeploys the agent of a
// device with a new one-time enrollment code, and the job follows it until
// the device has enrolled with that code, or the code expired or the job
// was canceled. The job's Temporal workflow (workflows.OnboardingRedeploy)
// sends the code to the agent when it is connected and watches the job.
package onboarding

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/db"
	"github.com/cairn-rmm/cairn/internal/devicetrust"
	"github.com/cairn-rmm/cairn/internal/enrollment"
)

// Job statuses. pending: recorded, the workflow not yet sent anything;
// sent: the agent took the code; agent_offline: the agent could not be
// reached, the code waits for a manual install; then one of the final
// ones.
const (
	StatusPending      = "pending"
	StatusSent         = "sent"
	StatusAgentOffline = "agent_offline"
	StatusEnrolled     = "enrolled"
	StatusExpired      = "expired"
	StatusCanceled     = "canceled"
	StatusFailed       = "failed"
)

// Error codes (declared in the onboarding capability's Codes).
const (
	// ECodeJobOpen: the device already has an open redeploy job.
	ECodeJobOpen = "onboarding_job_open"
	// ECodeDeviceNotActive: the device is quarantined or revoked; a
	// redeploy would let it back in past an administrator.
	ECodeDeviceNotActive = "onboarding_device_not_active"
	// ECodeJobFinished: cancel of a finished job, or retry of an open or
	// enrolled one.
	ECodeJobFinished = "onboarding_job_finished"
)

// Code lifetimes.
const (
	DefaultTTL = time.Hour
	MinTTL     = 5 * time.Minute
	MaxTTL     = 7 * 24 * time.Hour
)

// RedeployJob is a redeploy as operators see it.
type RedeployJob struct {
	ID          string            `json:"id"`
	DeviceGUID  cairn.DeviceGUID  `json:"device_guid"`
	SiteID      cairn.SiteID      `json:"site_id"`
	OperationID cairn.OperationID `json:"operation_id"`
	Status      string            `json:"status"`
	Reason      string            `json:"reason"`
	LastError   string            `json:"last_error"`
	RequestedBy string            `json:"requested_by"`
	RetryOf     *string           `json:"retry_of"`
	ExpiresAt   time.Time         `json:"expires_at"`
	CreatedAt   time.Time         `json:"created_at"`
	UpdatedAt   time.Time         `json:"updated_at"`
	FinishedAt  *time.Time        `json:"finished_at"`
}

// RedeployStarted is a new job with its code, answered once (for a manual
// install when the agent is not connected).
type RedeployStarted struct {
	RedeployJob
	EnrollmentCode string `json:"enrollment_code"`
}

// RedeployInput is what an operator asks for.
type RedeployInput struct {
	DeviceGUID string `json:"device_guid" limit:"max=64"`
	// SiteID moves the device to another site (0: its own).
	SiteID           int64  `json:"site_id"`
	ExpiresInSeconds int64  `json:"expires_in_seconds"`
	Reason           string `json:"reason" limit:"max=500"`
}

// Plan is what the workflow needs to send the redeploy: the request's
// payload and its grant are made where the operator was authorised.
type Plan struct {
	RedeployJob RedeployJob
	Payload     []byte
	// SiteSlug is the device's site now, whose worker holds its socket.
	SiteSlug string
}

// Service keeps redeploy jobs.
type Service struct {
	store      *db.Store
	enrollment *enrollment.Service
	now        func() time.Time
}

// New returns the service.
func New(store *db.Store, enroll *enrollment.Service, now func() time.Time) *Service {
	if now == nil {
		now = time.Now
	}
	return &Service{store: store, enrollment: enroll, now: now}
}

// Create records a redeploy of a device inside scope with a new one-time
// code: the device must be active (quarantine and revoke are an
// administrator's to lift) and have no open job; a target site must be in
// scope too. The answer carries the code and the agent request's payload.
func (s *Service) Create(ctx context.Context, scope cairn.SiteScope, actor string, in RedeployInput, retryOf *string) (RedeployStarted, Plan, error) {
	var v cairn.Validation
	ttl := DefaultTTL
	if in.ExpiresInSeconds != 0 {
		ttl = time.Duration(in.ExpiresInSeconds) * time.Second
		if ttl < MinTTL || ttl > MaxTTL {
			v.Add("expires_in_seconds", fmt.Sprintf("must be %d to %d (0: %d)", int(MinTTL.Seconds()), int(MaxTTL.Seconds()), int(DefaultTTL.Seconds())))
		}
	}
	in.Reason = strings.TrimSpace(in.Reason)
	if len([]rune(in.Reason)) > 500 {
		v.Add("reason", "at most 500 characters")
	}
	if in.DeviceGUID == "" {
		v.Add("device_guid", "is required")
	}
	if in.SiteID < 0 {
		v.Add("site_id", "must be a site, or 0 for the device's own")
	}
	if err := v.Err(); err != nil {
		return RedeployStarted{}, Plan{}, err
	}
	d, err := s.store.DeviceGetByGUID(ctx, cairn.DeviceGUID(in.DeviceGUID))
	if err != nil {
		return RedeployStarted{}, Plan{}, db.NotFound(err, "device not found")
	}
	if !scope.Allows(d.SiteID) {
		return RedeployStarted{}, Plan{}, cairn.Errorf(cairn.ECodeNotFound, "device not found")
	}
	if d.TrustState != devicetrust.TrustActive {
		return RedeployStarted{}, Plan{}, cairn.Errorf(ECodeDeviceNotActive, "%s is %s; an administrator releases it before a redeploy", d.Hostname, d.TrustState)
	}
	site := d.SiteID
	if in.SiteID != 0 {
		site = cairn.SiteID(in.SiteID)
		if _, err := s.store.SiteGet(ctx, site); err != nil || !scope.Allows(site) {
			return RedeployStarted{}, Plan{}, cairn.Invalid("site_id", "no such site")
		}
	}
	var row db.OnboardingJob
	var code string
	err = s.store.InTx(ctx, func(q *db.Queries) error {
		codeID, plain, err := s.enrollment.CreateRedeployCode(ctx, q, site, d.Guid, ttl, actor)
		if err != nil {
			return err
		}
		code = plain
		row, err = q.OnboardingJobInsert(ctx, db.OnboardingJobInsertParams{ID: uuid.NewString(), DeviceGuid: d.Guid, SiteID: site,
			EnrollmentCodeID: &codeID, OperationID: cairn.OperationID(uuid.NewString()), Reason: in.Reason, RequestedBy: actor,
			RetryOf: retryOf, ExpiresAt: s.now().Add(ttl)})
		return err
	})
	if db.IsUniqueViolation(err, "onboarding_jobs_open_idx") {
		return RedeployStarted{}, Plan{}, cairn.Errorf(ECodeJobOpen, "%s has a redeploy under way; cancel it first", d.Hostname)
	}
	if err != nil {
		return RedeployStarted{}, Plan{}, err
	}
	payload, err := json.Marshal(proto.AgentRedeployRequest{EnrollmentCode: code})
	if err != nil {
		return RedeployStarted{}, Plan{}, err
	}
	job := view(row)
	return RedeployStarted{RedeployJob: job, EnrollmentCode: code}, Plan{RedeployJob: job, Payload: payload, SiteSlug: d.SiteSlug}, nil
}

// Get returns a job whose device (and target site) lie inside scope.
func (s *Service) Get(ctx context.Context, scope cairn.SiteScope, id string) (RedeployJob, error) {
	row, err := s.store.OnboardingJobGet(ctx, id)
	if err != nil {
		return RedeployJob{}, db.NotFound(err, "onboarding job not found")
	}
	if !scope.All {
		d, err := s.store.DeviceGetByGUID(ctx, row.DeviceGuid)
		if err != nil || !scope.Allows(d.SiteID) || !scope.Allows(row.SiteID) {
			return RedeployJob{}, cairn.Errorf(cairn.ECodeNotFound, "onboarding job not found")
		}
	}
	return view(row), nil
}

// List returns the jobs inside scope, newest first, of one device or all.
func (s *Service) List(ctx context.Context, scope cairn.SiteScope, guid string, limit int) ([]RedeployJob, error) {
	p := db.OnboardingJobListParams{AllSites: scope.All, SiteIds: scope.IDs(), MaxRows: int32(limit)}
	if guid != "" {
		p.DeviceGuid = &guid
	}
	rows, err := s.store.OnboardingJobList(ctx, p)
	if err != nil {
		return nil, err
	}
	out := make([]RedeployJob, 0, len(rows))
	for _, r := range rows {
		out = append(out, view(r))
	}
	return out, nil
}

// SetStatus moves an open job (the workflow's activity); a finished job
// stays as it is. A job that ends without an enrollment takes its code
// with it.
func (s *Service) SetStatus(ctx context.Context, id, status, lastError string) (RedeployJob, error) {
	var row db.OnboardingJob
	err := s.store.InTx(ctx, func(q *db.Queries) error {
		var err error
		row, err = q.OnboardingJobSetStatus(ctx, db.OnboardingJobSetStatusParams{ID: id, Status: status, LastError: lastError})
		if db.IsNoRows(err) {
			row, err = q.OnboardingJobGet(ctx, id)
			return err
		}
		if err != nil {
			return err
		}
		if row.FinishedAt != nil && status != StatusEnrolled && row.EnrollmentCodeID != nil {
			return q.EnrollmentCodeExpire(ctx, *row.EnrollmentCodeID)
		}
		return nil
	})
	if err != nil {
		return RedeployJob{}, db.NotFound(err, "onboarding job not found")
	}
	return view(row), nil
}

// Enrolled reports whether the job's device has enrolled with its code.
func (s *Service) Enrolled(ctx context.Context, id string) (bool, error) {
	return s.store.OnboardingJobEnrolled(ctx, id)
}

// CheckCancel refuses to cancel a finished job.
func CheckCancel(j RedeployJob) error {
	if j.FinishedAt != nil {
		return cairn.Errorf(ECodeJobFinished, "the job is %s already", j.Status)
	}
	return nil
}

// RetryInput is the input of a retry of j: same device and site, a new
// code. Only a job that ended without an enrollment is retried.
func RetryInput(j RedeployJob) (RedeployInput, error) {
	if j.FinishedAt == nil || j.Status == StatusEnrolled {
		return RedeployInput{}, cairn.Errorf(ECodeJobFinished, "only a job that expired, failed or was canceled is retried (this one is %s)", j.Status)
	}
	return RedeployInput{DeviceGUID: string(j.DeviceGUID), SiteID: int64(j.SiteID), Reason: j.Reason}, nil
}

func view(r db.OnboardingJob) RedeployJob {
	return RedeployJob{ID: r.ID, DeviceGUID: r.DeviceGuid, SiteID: r.SiteID, OperationID: r.OperationID, Status: r.Status, Reason: r.Reason,
		LastError: r.LastError, RequestedBy: r.RequestedBy, RetryOf: r.RetryOf, ExpiresAt: r.ExpiresAt, CreatedAt: r.CreatedAt,
		UpdatedAt: r.UpdatedAt, FinishedAt: r.FinishedAt}
}
