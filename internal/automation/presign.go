package automation

import (
	"context"
	"encoding/json"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/agent/proto"
)

// SignContent signs what a run of spec would execute, bound to no run and
// no device and without expiry: a scheduled job's content, signed when the
// job is saved, with purpose proto.PurposeScriptContent, which no agent
// runs. Each fire verifies it and signs, from what it signed, one payload
// per device bound to the device and the run (CreateRun), so a row
// planted in the database is refused rather than signed, and a fire needs
// a process whose master cipher is unlocked.
// spec names an assembly (its current version); parameters are checked
// as CreateRun checks them. It returns the payload and the version signed.
func (s *Service) SignContent(ctx context.Context, spec RunSpec) (proto.Signed, int, error) {
	if spec.AssemblyID == nil {
		return proto.Signed{}, 0, cairn.Invalid("assembly_id", "is required")
	}
	a, err := s.GetAssembly(ctx, *spec.AssemblyID, 0)
	if cairn.IsCode(err, cairn.ECodeNotFound) {
		return proto.Signed{}, 0, cairn.Invalid("assembly_id", err.Error())
	} else if err != nil {
		return proto.Signed{}, 0, err
	}
	if a.Kind != KindScript && a.Kind != KindAnsiblePlaybook {
		return proto.Signed{}, 0, cairn.Invalid("assembly_id", "must be a script or Ansible playbook assembly")
	}
	spec.Language, spec.Body = a.Language, a.Body
	if a.Kind == KindAnsiblePlaybook {
		spec.Language = proto.LangAnsible
	}
	spec.TimeoutSeconds = cmpOr(cmpOr(spec.TimeoutSeconds, a.TimeoutSeconds), DefaultTimeout)
	params, err := checkRun(spec, a.Parameters)
	if err != nil {
		return proto.Signed{}, 0, err
	}
	raw, err := json.Marshal(proto.ScriptJob{Purpose: proto.PurposeScriptContent, Language: spec.Language, Body: a.Body, Parameters: params,
		TimeoutSeconds: spec.TimeoutSeconds, RunAs: a.RunAs, IssuedAt: s.now().UTC()})
	if err != nil {
		return proto.Signed{}, 0, err
	}
	signed, err := s.signer.Sign(ctx, raw)
	return signed, a.Version, err
}

// verifiedContent checks a scheduled job's saved content: signed by a key
// agents trust now, of the content purpose (or, saved before purposes,
// bound to no device and no run), so a payload meant for one device or
// run cannot be replayed as a job's content.
func (s *Service) verifiedContent(ctx context.Context, sg proto.Signed) (proto.ScriptJob, error) {
	payload, err := s.signer.Verify(ctx, sg)
	if err != nil {
		return proto.ScriptJob{}, cairn.Errorf(ECodeContentUnverified,
			"the scheduled job's saved content does not verify with a trusted script-signing key; save the job again")
	}
	job, err := proto.DecodeScriptJob(payload)
	legacy := job.Purpose == "" && job.DeviceGUID == "" && job.RunID == ""
	if err != nil || (job.Purpose != proto.PurposeScriptContent && !legacy) {
		return proto.ScriptJob{}, cairn.Errorf(ECodeContentUnverified, "the scheduled job's saved content is not script content")
	}
	if job.Parameters == nil {
		job.Parameters = map[string]string{}
	}
	return job, nil
}
