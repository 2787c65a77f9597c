package metadata

import (
	"context"
	_ "embed"

	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/internal/automation"
)

// The bundled Windows scripts that collect reserved fields 1 and 2. They
// run like any script assembly (quick run, scheduled job) and write the
// field with the agent's command line, found through CAIRN_AGENT_BIN and
// CAIRN_AGENT_CONFIG (set by the agent for every script).
var (
	//go:embed scripts/server_roles.ps1
	serverRolesScript string
	//go:embed scripts/bitlocker.ps1
	bitlockerScript string
)

// Bundled assembly keys and the reserved fields they collect.
const (
	BundledServerRoles = "metadata_server_roles"
	BundledBitlocker   = "metadata_bitlocker"
)

var bundledFields = map[string]int{BundledServerRoles: 1, BundledBitlocker: 2}

// BundledAssemblies are the assemblies EnsureBundled seeds.
func BundledAssemblies() []automation.Bundled {
	return []automation.Bundled{
		{Key: BundledServerRoles, Input: automation.AssemblyInput{
			Name: "Collect Server Roles (metadata field 1)", Kind: automation.KindScript, Language: proto.LangPowerShell,
			Description: "Bundled with Cairn. Records the installed Windows Server roles (Get-WindowsFeature) in metadata field 1, " +
				"Server Roles; workstations record a fallback. Runs on Windows devices.",
			Body: serverRolesScript, TimeoutSeconds: 300}},
		{Key: BundledBitlocker, Input: automation.AssemblyInput{
			Name: "Collect BitLocker status (metadata field 2)", Kind: automation.KindScript, Language: proto.LangPowerShell,
			Description: "Bundled with Cairn. Records each volume's BitLocker Drive Encryption status (Get-BitLockerVolume, " +
				"or manage-bde) in metadata field 2. Runs on Windows devices.",
			Body: bitlockerScript, TimeoutSeconds: 300}},
	}
}

// SeedBundled makes the bundled assemblies exist (at Engine start; see
// automation.Service.EnsureBundled for how releases version them).
func SeedBundled(ctx context.Context, a *automation.Service) error {
	_, err := a.EnsureBundled(ctx, BundledAssemblies())
	return err
}

// linkedAssemblies maps reserved field numbers to their bundled assembly.
func (s *Service) linkedAssemblies(ctx context.Context) (map[int]*int64, error) {
	rows, err := s.store.AssemblyBundledIDs(ctx)
	if err != nil {
		return nil, err
	}
	out := map[int]*int64{}
	for _, r := range rows {
		if n, ok := bundledFields[r.BundledKey]; ok {
			id := r.ID
			out[n] = &id
		}
	}
	return out, nil
}
