// Package shells is the Engine side of remote shell sessions (docs/api.md
// "Remote shell"): session records and their single-use tokens, the scoped
// operation tokens of POST /api/remote-ops/session, the in-process meeting
// of an operator's socket with the agent's (Registry), the bridge between
// the two (Bridge) and the session transcript (Recorder).
//
// It speaks WebSocket frames but not HTTP: the api package accepts the
// sockets and authenticates both ends.
package shells

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/db"
	"github.com/cairn-rmm/cairn/internal/devices"
)

// Error codes of shell sessions.
const (
	// ECodeTokenInvalid: a shell socket with a token that is wrong, used,
	// expired, another operator's, or (agent side) another device's (403).
	ECodeTokenInvalid = "shell_token_invalid"
	// ECodeAgentTimeout: the agent did not connect its side in time.
	ECodeAgentTimeout = "shell_agent_timeout"
	// ECodeNotImplemented: a remote-ops capability that is not built yet (501).
	ECodeNotImplemented = "not_implemented"
)

// Session states.
const (
	StatePending    = "pending"    // established, the browser has not connected
	StateConnecting = "connecting" // the browser's socket waits for the agent's
	StateOpen       = "open"       // bridged
	StateClosed     = "closed"
)

// Limits and defaults.
const (
	// EstablishTTL is how long the browser has to connect after establish.
	EstablishTTL = 60 * time.Second
	// AgentWait is how long the browser's socket waits for the agent's.
	AgentWait = 30 * time.Second
	// DefaultIdleTimeout is sent to the agent when establish names none.
	DefaultIdleTimeout = 900
	MinIdleTimeout     = 60
	MaxIdleTimeout     = 86400
	// MaxTermSize bounds cols and rows (the agent's bound too).
	MaxTermSize = 1000
	// OpTokenTTL is the lifetime of a scoped operation token.
	OpTokenTTL = 60 * time.Second
	// MaxList bounds one page of GET /api/shell/sessions.
	MaxList     = 200
	DefaultList = 50
)

// Capabilities of scoped operation tokens; only CapShell is usable yet.
const (
	CapShell   = "shell"
	CapDesktop = "desktop"
	CapFile    = "file"
)

// ActivityKind is the device activity kind of a shell session.
const ActivityKind = "shell_session"

// Service keeps shell sessions and operation tokens.
type Service struct {
	store   *db.Store
	devices *devices.Service
	log     *slog.Logger
	cfg     Config
}

// Config is the deployment's transcript policy (docs/api.md "Remote
// shell"). The zero value takes the defaults.
type Config struct {
	// TranscriptMax caps one session's transcript; reaching it ends the
	// session (CAIRN_SHELL_TRANSCRIPT_MAX_BYTES; 0: DefaultTranscriptMax).
	TranscriptMax int64
	// NoInputRecording leaves the operator's keystrokes out of
	// transcripts (CAIRN_SHELL_RECORD_INPUT=0). Recorded input includes
	// whatever is typed at a prompt that does not echo, passwords too.
	NoInputRecording bool
}

// New returns the service.
func New(store *db.Store, devs *devices.Service, log *slog.Logger, cfg Config) *Service {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if cfg.TranscriptMax <= 0 {
		cfg.TranscriptMax = DefaultTranscriptMax
	}
	return &Service{store: store, devices: devs, log: log, cfg: cfg}
}

// Recorder starts the transcript of session id, streamed to PostgreSQL
// chunk by chunk.
func (s *Service) Recorder(id string, cols, rows int, title string, start time.Time) *Recorder {
	return NewRecorder(RecorderOptions{Cols: cols, Rows: rows, Title: title, Start: start, Max: s.cfg.TranscriptMax,
		RecordInput: !s.cfg.NoInputRecording,
		Write: func(ctx context.Context, seq int32, data []byte) error {
			_, err := s.store.ShellTranscriptAppend(ctx, db.ShellTranscriptAppendParams{SessionID: id, Seq: seq, Data: data})
			return err
		}})
}

// Session is a shell session as stored (without its transcript).
type Session struct {
	ID                  string
	GUID                cairn.DeviceGUID // "" once the device was purged
	Hostname            string
	SiteID              cairn.SiteID
	Operator            string
	State               string
	Cols, Rows          int
	IdleTimeoutSeconds  int
	Replica             string
	CreatedAt           time.Time
	ConnectedAt         *time.Time
	StartedAt           *time.Time
	EndedAt             *time.Time
	ExpiresAt           *time.Time
	ExitCode            *int
	CloseReason         string
	ActivityID          int64
	TranscriptBytes     int64
	TranscriptTruncated bool
}

// Duration is how long the shell was bridged (0 when it never opened).
func (s Session) Duration() time.Duration {
	if s.StartedAt == nil || s.EndedAt == nil {
		return 0
	}
	return s.EndedAt.Sub(*s.StartedAt)
}

func fromRow(r db.ShellSessionGetRow) Session {
	s := Session{ID: r.ID, Hostname: r.Hostname, Operator: r.Operator, State: r.State, Cols: int(r.Cols), Rows: int(r.Rows),
		IdleTimeoutSeconds: int(r.IdleTimeoutSeconds), CreatedAt: r.CreatedAt, ConnectedAt: r.ConnectedAt,
		StartedAt: r.StartedAt, EndedAt: r.EndedAt, CloseReason: r.CloseReason, TranscriptBytes: r.TranscriptBytes,
		TranscriptTruncated: r.TranscriptTruncated}
	if !r.ExpiresAt.IsZero() {
		e := r.ExpiresAt
		s.ExpiresAt = &e
	}
	if r.DeviceGuid != nil {
		s.GUID = *r.DeviceGuid
	}
	if r.SiteID != nil {
		s.SiteID = *r.SiteID
	}
	if r.Replica != nil {
		s.Replica = *r.Replica
	}
	if r.ExitCode != nil {
		c := int(*r.ExitCode)
		s.ExitCode = &c
	}
	if r.ActivityID != nil {
		s.ActivityID = *r.ActivityID
	}
	return s
}

// claimed converts the rows of the claim and finish queries, which share
// their columns.
func claimed(r db.ShellSessionFinishRow) Session {
	return fromRow(db.ShellSessionGetRow{ID: r.ID, DeviceGuid: r.DeviceGuid, Hostname: r.Hostname, SiteID: r.SiteID,
		Operator: r.Operator, State: r.State, Cols: r.Cols, Rows: r.Rows, IdleTimeoutSeconds: r.IdleTimeoutSeconds,
		Replica: r.Replica, CreatedAt: r.CreatedAt, ConnectedAt: r.ConnectedAt, StartedAt: r.StartedAt, EndedAt: r.EndedAt,
		ExitCode: r.ExitCode, CloseReason: r.CloseReason, ActivityID: r.ActivityID, TranscriptTruncated: r.TranscriptTruncated})
}

// newToken returns a random token and its stored hash.
func newToken() (string, []byte, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", nil, err
	}
	t := base64.RawURLEncoding.EncodeToString(b)
	return t, hashToken(t), nil
}

func hashToken(t string) []byte {
	h := sha256.Sum256([]byte(t))
	return h[:]
}

// Established is a new session: Token goes to the browser (in its socket
// URL); only its hash is stored.
type Established struct {
	ID        string
	Token     string
	ExpiresAt time.Time
}

// Options of a new session; zero values take the defaults.
type Options struct {
	Cols, Rows         int
	IdleTimeoutSeconds int
}

// Establish records a pending session on t for operator. Nothing is sent
// to the agent until the browser connects.
func (s *Service) Establish(ctx context.Context, t devices.OperationTarget, operator string, o Options) (Established, error) {
	if o.Cols == 0 {
		o.Cols = 80
	}
	if o.Rows == 0 {
		o.Rows = 24
	}
	if o.IdleTimeoutSeconds == 0 {
		o.IdleTimeoutSeconds = DefaultIdleTimeout
	}
	tok, hash, err := newToken()
	if err != nil {
		return Established{}, err
	}
	id := uuid.NewString()
	guid, site := t.GUID, t.SiteID
	row, err := s.store.ShellSessionInsert(ctx, db.ShellSessionInsertParams{ID: id, DeviceGuid: &guid, Hostname: t.Hostname,
		SiteID: &site, Operator: operator, TokenHash: hash, Cols: int32(o.Cols), Rows: int32(o.Rows),
		IdleTimeoutSeconds: int32(o.IdleTimeoutSeconds), TtlSeconds: EstablishTTL.Seconds()})
	if err != nil {
		return Established{}, err
	}
	return Established{ID: row.ID, Token: tok, ExpiresAt: row.ExpiresAt}, nil
}

func tokenInvalid() error {
	return cairn.Errorf(ECodeTokenInvalid, "the shell session does not exist, has expired, or its token was already used")
}

// ClaimBrowser takes the browser's single-use token: the pending session
// of operator moves to connecting on replica, its activity row opens, and
// the agent's single-use token is made (returned, stored hashed). On an
// error after the claim the session is returned too, for Finish.
func (s *Service) ClaimBrowser(ctx context.Context, id, token, operator, replica string) (sess Session, agentToken string, err error) {
	if id == "" || token == "" {
		return Session{}, "", tokenInvalid()
	}
	agentToken, agentHash, err := newToken()
	if err != nil {
		return Session{}, "", err
	}
	row, err := s.store.ShellSessionClaimBrowser(ctx, db.ShellSessionClaimBrowserParams{ID: id, TokenHash: hashToken(token),
		Operator: operator, Replica: &replica, AgentTokenHash: agentHash})
	if db.IsNoRows(err) {
		return Session{}, "", tokenInvalid()
	}
	if err != nil {
		return Session{}, "", err
	}
	sess = claimed(db.ShellSessionFinishRow(row))
	a, err := s.devices.RecordActivity(ctx, devices.NewActivity{GUID: sess.GUID, Hostname: sess.Hostname, SiteID: sess.SiteID,
		Kind: ActivityKind, Summary: "Remote shell", Actor: operator, Status: devices.ActivityRunning,
		Metadata: map[string]any{"shell_session_id": sess.ID}})
	if err != nil {
		return sess, "", fmt.Errorf("record shell activity: %w", err)
	}
	sess.ActivityID = a.ID
	if err := s.store.ShellSessionSetActivity(ctx, db.ShellSessionSetActivityParams{ID: sess.ID, ActivityID: &a.ID}); err != nil {
		return sess, "", err
	}
	return sess, agentToken, nil
}

// ClaimAgent takes the agent's single-use token for the device guid: only
// a connecting session of that device moves to open. A wrong device or
// token leaves the session as it was.
func (s *Service) ClaimAgent(ctx context.Context, id, token string, guid cairn.DeviceGUID) (Session, error) {
	if id == "" || token == "" {
		return Session{}, tokenInvalid()
	}
	row, err := s.store.ShellSessionClaimAgent(ctx, db.ShellSessionClaimAgentParams{ID: id, AgentTokenHash: hashToken(token),
		DeviceGuid: &guid})
	if db.IsNoRows(err) {
		return Session{}, tokenInvalid()
	}
	if err != nil {
		return Session{}, err
	}
	return claimed(db.ShellSessionFinishRow(row)), nil
}

// Outcome is how a session ended.
type Outcome struct {
	// Failed: the shell never opened (the agent refused or never came).
	Failed   bool
	Reason   string
	ExitCode *int
}

// Finish closes the session once and its activity row with the outcome,
// duration and exit code. A session closed already is returned as is.
func (s *Service) Finish(ctx context.Context, id string, o Outcome) (Session, error) {
	var code *int32
	if o.ExitCode != nil {
		c := int32(*o.ExitCode)
		code = &c
	}
	row, err := s.store.ShellSessionFinish(ctx, db.ShellSessionFinishParams{ID: id, ExitCode: code, CloseReason: o.Reason})
	if db.IsNoRows(err) {
		return s.Get(ctx, cairn.AllSites, id)
	}
	if err != nil {
		return Session{}, err
	}
	sess := claimed(row)
	if sess.ActivityID == 0 {
		return sess, nil
	}
	status, summary := devices.ActivityCompleted, "Remote shell"
	if o.Failed {
		status = devices.ActivityFailed
	}
	meta := map[string]any{"shell_session_id": sess.ID, "reason": o.Reason, "duration_ms": sess.Duration().Milliseconds()}
	if sess.StartedAt != nil {
		meta["started_at"] = sess.StartedAt.UTC()
	}
	if sess.EndedAt != nil {
		meta["ended_at"] = sess.EndedAt.UTC()
	}
	var parts []string
	if o.Reason != "" {
		parts = append(parts, o.Reason)
	}
	if o.ExitCode != nil {
		meta["exit_code"] = *o.ExitCode
		parts = append(parts, fmt.Sprintf("exit %d", *o.ExitCode))
	}
	if sess.StartedAt != nil {
		parts = append(parts, "after "+sess.Duration().Round(time.Second).String())
	}
	if len(parts) > 0 {
		summary += ": " + strings.Join(parts, ", ")
	}
	if err := s.devices.OperationFinished(ctx, sess.ActivityID, status, summary, meta); err != nil {
		return sess, err
	}
	return sess, nil
}

// Get returns a session inside scope (not_found otherwise).
func (s *Service) Get(ctx context.Context, scope cairn.SiteScope, id string) (Session, error) {
	row, err := s.store.ShellSessionGet(ctx, db.ShellSessionGetParams{ID: id, AllSites: scope.All, SiteIds: scope.IDs()})
	if err != nil {
		return Session{}, db.NotFound(err, "shell session not found")
	}
	return fromRow(row), nil
}

// List returns sessions inside scope, newest first, of one hostname when
// it is not empty.
func (s *Service) List(ctx context.Context, scope cairn.SiteScope, hostname string, limit int) ([]Session, error) {
	var host *string
	if hostname != "" {
		if err := devices.CheckHostname("hostname", hostname); err != nil {
			return nil, err
		}
		host = &hostname
	}
	rows, err := s.store.ShellSessionList(ctx, db.ShellSessionListParams{Hostname: host, AllSites: scope.All,
		SiteIds: scope.IDs(), MaxRows: int32(limit)})
	if err != nil {
		return nil, err
	}
	out := make([]Session, len(rows))
	for i, r := range rows {
		out[i] = fromRow(db.ShellSessionGetRow(r))
	}
	return out, nil
}

// Transcript checks that a closed session inside scope has a transcript
// and returns its size; WriteTranscript then streams it. An open session
// is still recording (conflict); one that never opened has none
// (not_found).
func (s *Service) Transcript(ctx context.Context, scope cairn.SiteScope, id string) (int64, error) {
	row, err := s.store.ShellSessionTranscript(ctx, db.ShellSessionTranscriptParams{ID: id, AllSites: scope.All, SiteIds: scope.IDs()})
	if err != nil {
		return 0, db.NotFound(err, "shell session not found")
	}
	if row.State != StateClosed {
		return 0, cairn.Errorf(cairn.ECodeConflict, "the transcript is complete when the session ends")
	}
	if row.TranscriptBytes == 0 {
		return 0, cairn.Errorf(cairn.ECodeNotFound, "the session never opened a shell, so it has no transcript")
	}
	return row.TranscriptBytes, nil
}

// transcriptPage is how many chunks one read of a transcript takes.
const transcriptPage = 16

// WriteTranscript streams session id's transcript to w a page of chunks
// at a time (scope is Transcript's to check).
func (s *Service) WriteTranscript(ctx context.Context, id string, w io.Writer) error {
	for from := int32(0); ; {
		rows, err := s.store.ShellTranscriptChunks(ctx, db.ShellTranscriptChunksParams{SessionID: id, FromSeq: from, MaxRows: transcriptPage})
		if err != nil {
			return err
		}
		for _, c := range rows {
			if c.Seq != from {
				return fmt.Errorf("shell session %s: transcript chunk %d is missing", id, from)
			}
			if _, err := w.Write(c.Data); err != nil {
				return err
			}
			from++
		}
		if len(rows) < transcriptPage {
			return nil
		}
	}
}

// IssueOpToken returns a scoped operation token for capability on t,
// usable once by operator within OpTokenTTL.
func (s *Service) IssueOpToken(ctx context.Context, capability string, t devices.OperationTarget, operator string) (string, time.Time, error) {
	if capability != CapShell && capability != CapDesktop {
		return "", time.Time{}, cairn.Errorf(ECodeNotImplemented, "the %s capability is not available yet; shell and desktop are", capability)
	}
	if err := s.store.RemoteOpTokenSweep(ctx); err != nil {
		s.log.Warn("sweep expired operation tokens", "err", err)
	}
	tok, hash, err := newToken()
	if err != nil {
		return "", time.Time{}, err
	}
	exp, err := s.store.RemoteOpTokenInsert(ctx, db.RemoteOpTokenInsertParams{TokenHash: hash, Capability: capability,
		DeviceGuid: t.GUID, Operator: operator, TtlSeconds: OpTokenTTL.Seconds()})
	if err != nil {
		return "", time.Time{}, err
	}
	return tok, exp, nil
}

// RedeemOpToken uses an operation token once and returns its device GUID.
func (s *Service) RedeemOpToken(ctx context.Context, capability, token, operator string) (string, error) {
	guid, err := s.store.RemoteOpTokenRedeem(ctx, db.RemoteOpTokenRedeemParams{TokenHash: hashToken(token),
		Capability: capability, Operator: operator})
	if db.IsNoRows(err) {
		return "", cairn.Invalid("operation_token", "is unknown, expired, already used, or not yours")
	}
	return string(guid), err
}
