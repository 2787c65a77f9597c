package automation

import "github.com/cairn-rmm/cairn/agent/proto"

// AnsibleRunner describes how Ansible playbook assemblies run
// (GET /api/server/ansible-runner-settings, docs/architecture.md "Ansible
// playbooks"). Nothing of it is configurable today: it is the contract
// the agent and the Engine implement, shown to administrators.
type AnsibleRunner struct {
	// Runner is where playbooks run: "agent", each target device's own
	// agent (no controller, no inbound SSH).
	Runner     string   `json:"runner"`
	Inventory  string   `json:"inventory"`
	Connection string   `json:"connection"`
	Platforms  []string `json:"platforms"`
	// Capability is what a device's agent must report.
	Capability string        `json:"capability"`
	Command    string        `json:"command"`
	Binary     AnsibleBinary `json:"binary"`
	// Signing: the playbook is signed per device and run by the
	// script-signing key and verified by the agent, like scripts.
	Signing               string       `json:"signing"`
	Parameters            string       `json:"parameters"`
	DefaultTimeoutSeconds int          `json:"default_timeout_seconds"`
	MaxTimeoutSeconds     int          `json:"max_timeout_seconds"`
	TimeoutAction         string       `json:"timeout_action"`
	MaxOutputBytes        int          `json:"max_output_bytes"`
	Result                string       `json:"result"`
	Slots                 AnsibleSlots `json:"slots"`
}

// AnsibleBinary is how the agent finds ansible-playbook and its version.
type AnsibleBinary struct {
	Name             string `json:"name"`
	Discovery        string `json:"discovery"`
	VersionDetection string `json:"version_detection"`
	MinCoreVersion   string `json:"min_core_version"`
	UnavailableCode  string `json:"unavailable_code"`
}

// AnsibleSlots is how playbook runs count against the site workers'
// scheduled lanes (SPEC "Limits").
type AnsibleSlots struct {
	Lane          string `json:"lane"`
	SiteCapacity  int    `json:"site_capacity"`
	SharedBatch   string `json:"shared_batch"`
	IndividualRun string `json:"individual_run"`
	Scheduled     string `json:"scheduled"`
	SlotKind      string `json:"slot_kind"`
}

// AnsibleRunnerSettings returns the runner's settings; siteCapacity is
// the site workers' scheduled lane capacity.
func AnsibleRunnerSettings(siteCapacity int, slotKind string) AnsibleRunner {
	return AnsibleRunner{
		Runner: "agent", Inventory: "localhost", Connection: "local", Platforms: []string{"linux"},
		Capability: string(proto.CapAnsible),
		Command:    "ansible-playbook --inventory localhost, --connection local --limit localhost --extra-vars @parameters.json playbook.yml",
		Binary: AnsibleBinary{Name: "ansible-playbook",
			Discovery:        "looked up on the agent's PATH at each run",
			VersionDetection: "ansible-playbook --version, remembered per binary until the file changes",
			MinCoreVersion:   proto.AnsibleMinCoreVersion, UnavailableCode: proto.CodeAnsibleUnavailable},
		Signing:               "per device and run with the script-signing key, verified by the agent like scripts",
		Parameters:            "extra vars (a JSON file) and CAIRN_PARAM_<NAME> environment variables",
		DefaultTimeoutSeconds: DefaultTimeout, MaxTimeoutSeconds: MaxTimeoutSeconds,
		TimeoutAction:  "the playbook's process group is killed; the result is timed_out",
		MaxOutputBytes: proto.MaxScriptOutput,
		Result:         "per device: exit code, output, and the PLAY RECAP counts (ok, changed, unreachable, failed, skipped, rescued, ignored)",
		Slots: AnsibleSlots{Lane: "scheduled", SiteCapacity: siteCapacity, SlotKind: slotKind,
			SharedBatch:   "one slot per site of the batch while the batch runs",
			IndividualRun: "one slot per one-target run",
			Scheduled:     "a scheduled job's fire holds one slot per site while active; its playbook batches take none of their own"},
	}
}
