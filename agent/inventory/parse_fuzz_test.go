package inventory

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cairn-rmm/cairn/agent/patches"
)

// The parsers read the output of package managers, systemd and loginctl,
// which vary by distribution and version (and can be steered by whoever
// names a package or a unit): whatever they print, a parser must return
// something the agent can send, never panic.

// inventoryParsers are the fuzzed parsers, by the selector byte.
var inventoryParsers = []func(string) any{
	func(s string) any { return parseDpkg(s) },
	func(s string) any { return parseRPM(s) },
	func(s string) any { return patches.ParseAptSimulate(s) },
	func(s string) any {
		return patches.ParseCheckUpdate(s, "dnf", map[string]string{"bash.x86_64": "5.1.8-9.el9", "kernel": "5.14.0-427.el9"})
	},
	func(s string) any { return parseZypperUpdates(s) },
	func(s string) any { return parseOSRelease(s) },
	func(s string) any { return mergeServices(parseSystemctlUnits(s), parseSystemctlUnitFiles(s)) },
	func(s string) any { return parseLoginctlSession(s, time.FixedZone("CET", 3600)).Session },
	func(s string) any { return parseLoginctlList(s) },
	func(s string) any { return patches.ParseAptHistory(strings.NewReader(s), "amd64", time.UTC) },
	func(s string) any { return patches.ParseDnfRPMLog(strings.NewReader(s)) },
	func(s string) any { return patches.ParseUpdateInfo(s) },
}

func FuzzInventoryParsers(f *testing.F) {
	// Seeds: the real outputs the parser tests use, each offered to every
	// parser (the fuzzer mutates from there).
	names, err := filepath.Glob(filepath.Join("testdata", "*.txt"))
	if err != nil || len(names) == 0 {
		f.Fatalf("no testdata seeds: %v", err)
	}
	for _, name := range names {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		for i := range inventoryParsers {
			f.Add(uint8(i), string(b))
		}
	}
	f.Add(uint8(7), "Id=c1\nTimestamp=Mon 2026-99-99 25:61:61 CET\n")
	f.Add(uint8(6), "● x.service\n×\n@.service enabled\n")
	f.Fuzz(func(t *testing.T, which uint8, out string) {
		got := inventoryParsers[int(which)%len(inventoryParsers)](out)
		if _, err := json.Marshal(got); err != nil {
			t.Fatalf("parser %d returned what cannot be sent: %v", which, err)
		}
	})
}
