package automation

import (
	"fmt"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Ansible playbook assemblies run on each target device against
// localhost with connection local (docs/architecture.md "Ansible
// playbooks"): a play aimed at other hosts, another connection or
// another playbook file would do nothing, or something else, there.

// playHosts are the host patterns a play may name: the device itself.
var playHosts = map[string]bool{"localhost": true, "all": true, "127.0.0.1": true}

// checkPlaybook reports what in body cannot run as a device's playbook,
// "" when it can.
func checkPlaybook(body string) string {
	if strings.TrimSpace(body) == "" {
		return "is required"
	}
	var plays []map[string]any
	if err := yaml.Unmarshal([]byte(body), &plays); err != nil {
		return "must be a YAML list of plays: " + firstLine(err.Error())
	}
	if len(plays) == 0 {
		return "must hold at least one play"
	}
	for i, play := range plays {
		if _, ok := play["import_playbook"]; ok {
			return fmt.Sprintf("play %d imports another playbook; a playbook assembly runs alone", i+1)
		}
		hosts, _ := play["hosts"].(string)
		if !playHosts[strings.TrimSpace(hosts)] {
			return fmt.Sprintf("play %d must have hosts: localhost (or all): it runs on each target device", i+1)
		}
		if c, ok := play["connection"]; ok && c != "local" {
			return fmt.Sprintf("play %d must have connection: local (or none): it runs on each target device", i+1)
		}
	}
	return ""
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
