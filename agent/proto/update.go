package proto

import "time"

// ---- Agent updates (docs/api.md "Agent updates") ------------------------

// EventAgentUpdate asks the agent to replace itself with an artifact
// (AgentUpdateRequest); it answers AgentUpdateAccepted at once and reports
// the rest to PathUpdateProgress.
const EventAgentUpdate = "agent_update_request"

// Agent update paths (Device auth).
const (
	PathUpdateManifest = "/api/agent/update/manifest"
	PathUpdateProgress = "/api/agent/update/progress"
)

// AgentUpdateRequest is the payload of EventAgentUpdate. The fields beside
// Signature repeat what it signs for logs; the agent trusts only the
// signed payload (an UpdateArtifact).
type AgentUpdateRequest struct {
	OperationID string `json:"operation_id"`
	ArtifactID  string `json:"artifact_id"`
	BuildID     string `json:"build_id"`
	SHA256      string `json:"sha256"`
	Size        int64  `json:"size"`
	DownloadURL string `json:"download_url"`
	Signature   Signed `json:"signature"`
	// ArtifactSignature is the artifact key's signature (protocol version
	// 3): a version 3 agent verifies only this one, with its artifact
	// keys; Signature is the script key's, kept for older agents.
	ArtifactSignature *Signed `json:"artifact_signature,omitempty"`
	// Force reinstalls even when the agent already runs BuildID (an
	// install-equivalent repair).
	Force bool `json:"force"`
}

// AgentUpdateAccepted answers EventAgentUpdate.
type AgentUpdateAccepted struct {
	Accepted bool `json:"accepted"`
}

// UpdateArtifact is what an artifact's signature signs (the JSON payload
// of the manifest's proto.Signed). The artifact key's signature covers
// Purpose (PurposeArtifact), BuildSeq and Rollback too; the script key's
// legacy signature covers the first five fields only.
type UpdateArtifact struct {
	Purpose    string `json:"purpose,omitempty"`
	ArtifactID string `json:"artifact_id"`
	Platform   string `json:"platform"`
	BuildID    string `json:"build_id"`
	SHA256     string `json:"sha256"`
	Size       int64  `json:"size"`
	// BuildSeq orders builds: a version 3 agent refuses an artifact whose
	// BuildSeq is below its own unless Rollback is set. 0 is an unordered
	// (development) build.
	BuildSeq int64 `json:"build_seq,omitempty"`
	// Rollback marks an explicit, signed downgrade.
	Rollback bool `json:"rollback,omitempty"`
}

// UpdateManifest answers PathUpdateManifest: the current artifact for the
// device's platform.
type UpdateManifest struct {
	Platform    string `json:"platform"`
	ArtifactID  string `json:"artifact_id"`
	BuildID     string `json:"build_id"`
	SHA256      string `json:"sha256"`
	Size        int64  `json:"size"`
	DownloadURL string `json:"download_url"`
	Signature   Signed `json:"signature"`
	// ArtifactSignature: see AgentUpdateRequest.
	ArtifactSignature *Signed `json:"artifact_signature,omitempty"`
}

// UpdateProgress is the body of PathUpdateProgress. BuildID is the build
// of the agent posting it.
type UpdateProgress struct {
	OperationID string        `json:"operation_id" limit:"max=100"`
	Events      []UpdateEvent `json:"events" limit:"max=100"`
	BuildID     string        `json:"build_id" limit:"max=200"`
	// ToBuildID and ArtifactID name the target of an update the agent
	// started itself (the hourly check), which the Engine has no record of
	// until this post.
	ToBuildID  string `json:"to_build_id,omitempty" limit:"max=200"`
	ArtifactID string `json:"artifact_id,omitempty" limit:"max=200"`
}

// UpdateEvent is one step of an update.
type UpdateEvent struct {
	Phase      string    `json:"phase"`
	Percent    int       `json:"percent" limit:"min=0,max=100"`
	Message    string    `json:"message"`
	CapturedAt time.Time `json:"captured_at"`
}

// UpdateProgressResponse answers PathUpdateProgress with the operation's
// status as the Engine records it.
type UpdateProgressResponse struct {
	Status string `json:"status"`
}

// Update phases, in order; completed, failed and rolled_back end an update.
const (
	UpdateAccepted         = "accepted"
	UpdateDownloading      = "downloading"
	UpdateVerifying        = "verifying"
	UpdateInstalling       = "installing"
	UpdateRestarting       = "restarting"
	UpdateVerifyingCheckin = "verifying_checkin"
	UpdateCompleted        = "completed"
	UpdateFailed           = "failed"
	UpdateRolledBack       = "rolled_back"
)

// UpdatePhases lists every phase.
var UpdatePhases = []string{UpdateAccepted, UpdateDownloading, UpdateVerifying, UpdateInstalling, UpdateRestarting,
	UpdateVerifyingCheckin, UpdateCompleted, UpdateFailed, UpdateRolledBack}

// An update request whose signature does not verify is refused with
// CodeSignatureInvalid (scripts.go).
