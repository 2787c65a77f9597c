package inventory_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/internal/inventory"
)

func TestPatchKey(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		entry proto.PatchEntry
		want  string
	}{
		{proto.PatchEntry{KB: "KB5034441", UpdateID: "u", Package: "p", Title: "t"}, "kb:KB5034441"},
		{proto.PatchEntry{KB: "kb5034441"}, "kb:KB5034441"},
		{proto.PatchEntry{KB: " 5034441 "}, "kb:KB5034441"},
		{proto.PatchEntry{KB: "kb 5034441"}, "kb:KB5034441"},
		{proto.PatchEntry{KB: "ms-17"}, "kb:MS-17"},
		{proto.PatchEntry{KB: "  ", UpdateID: " 6B5C-AAAA ", Title: "t"}, "update:6b5c-aaaa"},
		{proto.PatchEntry{Package: " openssl ", Title: "t"}, "pkg:openssl"},
		{proto.PatchEntry{Package: "openssl", InstalledVersion: "3.0.1", CandidateVersion: "3.0.2"}, "pkg:openssl=3.0.2"},
		{proto.PatchEntry{Package: "openssl", InstalledVersion: "3.0.2", State: "installed"}, "pkg:openssl=3.0.2"},
		{proto.PatchEntry{Title: "  Cumulative   Update "}, "title:cumulative update"},
		{proto.PatchEntry{}, ""},
	} {
		require.Equal(t, tc.want, inventory.PatchKey(tc.entry), "%+v", tc.entry)
	}
}

// The same machine normalizes to the same bytes whatever order the agent
// listed things in, and nil collections produce no part.
func TestNormalizeIsOrderIndependent(t *testing.T) {
	t.Parallel()
	login := time.Date(2030, 1, 1, 8, 0, 0, 0, time.FixedZone("CET", 3600))
	a := proto.Inventory{
		Software: []proto.Software{{Name: "b", Version: "1"}, {Name: "A", Version: "2"}, {Name: "a ", Version: "2", Publisher: "X"}},
		Services: []proto.Service{{Name: "z"}, {Name: "y", State: "RUNNING"}},
		Sessions: []proto.Session{{Username: "u", TTY: "1", LoginAt: &login}, {Username: "u", TTY: "1", Active: true}},
		Patches: []proto.PatchEntry{{KB: "1", State: "pending", Source: "wua_pending"}, {KB: "KB1", State: "installed", Source: "quick_fix_engineering"},
			{KB: "KB1", State: "installed", Source: "wua_history"}},
		Processes: []proto.Process{{PID: 3}, {PID: 1}, {PID: 3, Name: "dup"}},
	}
	b := proto.Inventory{
		Software:  []proto.Software{a.Software[2], a.Software[0], a.Software[1]},
		Services:  []proto.Service{a.Services[1], a.Services[0]},
		Sessions:  []proto.Session{a.Sessions[1], a.Sessions[0]},
		Patches:   []proto.PatchEntry{a.Patches[2], a.Patches[1], a.Patches[0]},
		Processes: []proto.Process{a.Processes[2], a.Processes[1], a.Processes[0]},
	}
	na, err := inventory.Normalize(a)
	require.NoError(t, err)
	nb, err := inventory.Normalize(b)
	require.NoError(t, err)
	require.Equal(t, na.Parts, nb.Parts)
	names := []string{}
	for _, p := range na.Parts {
		names = append(names, p.Name)
	}
	require.Equal(t, []string{"sessions", "software", "services", "processes", "patches"}, names)

	require.Len(t, na.Software, 2)
	require.Equal(t, "X", na.Software[0].Publisher, "the report with a publisher wins")
	require.Len(t, na.Sessions, 1)
	require.True(t, na.Sessions[0].Active)
	require.Len(t, na.Patches, 1)
	require.Equal(t, "installed", na.Patches[0].State)
	require.Equal(t, "quick_fix_engineering", na.Patches[0].Source)
	require.Len(t, na.Processes, 2)
	require.Equal(t, "running", na.Services[0].State)
}

// Uptime is stored as the boot, so a later post of the same boot is the
// same part.
func TestNormalizeStoresTheBootNotTheUptime(t *testing.T) {
	t.Parallel()
	boot := time.Date(2030, 1, 1, 8, 0, 0, 0, time.UTC)
	one, err := inventory.Normalize(proto.Inventory{Uptime: &proto.Uptime{BootTime: boot.Add(400 * time.Millisecond), UptimeSeconds: 10}})
	require.NoError(t, err)
	two, err := inventory.Normalize(proto.Inventory{Uptime: &proto.Uptime{BootTime: boot.In(time.FixedZone("X", 7200)), UptimeSeconds: 900}})
	require.NoError(t, err)
	require.Equal(t, one.Parts, two.Parts)
	require.Equal(t, boot, one.Uptime.BootTime)
}

func TestNormalizeKeepsEmptyApartFromMissing(t *testing.T) {
	t.Parallel()
	n, err := inventory.Normalize(proto.Inventory{Software: []proto.Software{}, Patches: []proto.PatchEntry{}})
	require.NoError(t, err)
	require.NotNil(t, n.Software)
	require.NotNil(t, n.Patches)
	require.Nil(t, n.Services)
	p, ok := n.Part(inventory.PartSoftware)
	require.True(t, ok)
	require.Equal(t, "[]", string(p.JSON))
	_, ok = n.Part(inventory.PartServices)
	require.False(t, ok)
}

func TestNormalizeRefusesTooMuch(t *testing.T) {
	t.Parallel()
	_, err := inventory.Normalize(proto.Inventory{Hardware: &proto.Hardware{Disks: make([]proto.Disk, inventory.MaxDisks+1)}})
	var e *cairn.Error
	require.ErrorAs(t, err, &e)
	require.Contains(t, e.Fields, "inventory.hardware.disks")
}
