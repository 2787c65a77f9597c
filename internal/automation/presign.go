package automation

import (
	"context"
	"encoding/json"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/agent/proto"
)

// SignContent signs what a run of spec would execute, bound to no run and
// no device and without expiry: a scheduled job's content, signed when the
// job is saved (the operator's process has the cipher unlocked) so its
// fires need no signing, even while the cipher is locked after a restart.
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
	if a.Kind != KindScript {
		return proto.Signed{}, 0, cairn.Invalid("assembly_id", "must be a script assembly")
	}
	spec.Language, spec.Body = a.Language, a.Body
	spec.TimeoutSeconds = cmpOr(cmpOr(spec.TimeoutSeconds, a.TimeoutSeconds), DefaultTimeout)
	params, err := checkRun(spec, a.Parameters)
	if err != nil {
		return proto.Signed{}, 0, err
	}
	raw, err := json.Marshal(proto.ScriptJob{Language: a.Language, Body: a.Body, Parameters: params,
		TimeoutSeconds: spec.TimeoutSeconds, IssuedAt: s.now().UTC()})
	if err != nil {
		return proto.Signed{}, 0, err
	}
	signed, err := s.signer.Sign(ctx, raw)
	return signed, a.Version, err
}
