package agent

import (
	"fmt"
	"time"

	"github.com/cairn-rmm/cairn/agent/proto"
)

// refuse is the agent's answer to a payload it will not run.
func refuse(format string, args ...any) error {
	return &proto.Error{Code: proto.CodeSignatureInvalid, Message: fmt.Sprintf(format, args...)}
}

// VerifyScript checks sg against cfg's trusted script keys and returns
// the job it carries. The signed job must name its purpose
// (proto.PurposeScript), this device, a run and an expiry still ahead:
// anything else (an update manifest, a key list, a scheduled job's saved
// content, a payload for another device or run-less, an expired one) is
// refused like a bad signature, because signed content meant for
// something or someone else, or for earlier, is not an order to this
// agent.
func VerifyScript(cfg *Config, sg proto.Signed, now time.Time) (proto.ScriptJob, error) {
	keys := cfg.ScriptSigning.TrustedPublicKeys
	if len(keys) == 0 {
		return proto.ScriptJob{}, refuse("this agent trusts no script-signing key yet")
	}
	payload, err := sg.Verify(keys)
	if err != nil {
		return proto.ScriptJob{}, refuse("the payload signature does not verify with a trusted key (key_id %q)", sg.KeyID)
	}
	job, err := proto.DecodeScriptJob(payload)
	if err != nil {
		return proto.ScriptJob{}, &proto.Error{Code: proto.CodeOpInvalid, Message: "the signed payload is not a script job"}
	}
	if job.Purpose != proto.PurposeScript {
		return proto.ScriptJob{}, refuse("the signed payload's purpose is %q, not %q", job.Purpose, proto.PurposeScript)
	}
	if job.DeviceGUID == "" || job.DeviceGUID != cfg.Agent.GUID {
		return proto.ScriptJob{}, refuse("the payload is not signed for this device")
	}
	if job.RunID == "" {
		return proto.ScriptJob{}, refuse("the payload is bound to no run")
	}
	if job.ExpiresAt == nil {
		return proto.ScriptJob{}, refuse("the payload has no expiry")
	}
	if !now.Before(*job.ExpiresAt) {
		return proto.ScriptJob{}, refuse("the payload expired at %s", job.ExpiresAt.UTC().Format(time.RFC3339))
	}
	return job, nil
}
