package inventory

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn/agent/proto"
)

func TestHashIgnoresVolatileParts(t *testing.T) {
	t.Parallel()
	base := Synthetic(3)
	h := Hash(base)
	require.Len(t, h, 64)

	same := []struct {
		name   string
		change func(*proto.Inventory)
	}{
		{"processes", func(inv *proto.Inventory) {
			inv.Processes = append(inv.Processes, proto.Process{PID: 99999, Name: "sleep"})
			inv.Processes[0].CPUPercent = 42
		}},
		{"uptime seconds", func(inv *proto.Inventory) { inv.Uptime.UptimeSeconds += 20 }},
		{"disk use within the same percent", func(inv *proto.Inventory) {
			inv.Hardware.Disks[0].UsedBytes += 4096
			inv.Hardware.Disks[0].FreeBytes -= 4096
		}},
		{"order of collections", func(inv *proto.Inventory) {
			s := inv.Software
			s[0], s[len(s)-1] = s[len(s)-1], s[0]
			a := inv.Network[1].Addresses // lo: 127.0.0.1/8, ::1/128
			a[0], a[1] = a[1], a[0]
			inv.Network[0], inv.Network[1] = inv.Network[1], inv.Network[0]
		}},
	}
	for _, tc := range same {
		inv := clone(t, base)
		tc.change(&inv)
		require.Equal(t, h, Hash(inv), tc.name)
	}

	unsorted := clone(t, base)
	unsorted.Network[0], unsorted.Network[1] = unsorted.Network[1], unsorted.Network[0]
	Hash(unsorted)
	require.Equal(t, "lo", unsorted.Network[0].Name, "Hash does not reorder the caller's slices")

	differ := []struct {
		name   string
		change func(*proto.Inventory)
	}{
		{"software version", func(inv *proto.Inventory) { inv.Software[5].Version += "+1" }},
		{"software not collected", func(inv *proto.Inventory) { inv.Software = nil }},
		{"software collected, none", func(inv *proto.Inventory) { inv.Software = []proto.Software{} }},
		{"service state", func(inv *proto.Inventory) { inv.Services[0].State = "failed" }},
		{"reboot", func(inv *proto.Inventory) { inv.Uptime.BootTime = inv.Uptime.BootTime.Add(time.Hour) }},
		{"disk fills by a percent", func(inv *proto.Inventory) {
			d := &inv.Hardware.Disks[0]
			step := (d.UsedBytes + d.FreeBytes) / 50
			d.UsedBytes, d.FreeBytes = d.UsedBytes+step, d.FreeBytes-step
		}},
		{"new address", func(inv *proto.Inventory) {
			inv.Network[0].Addresses = append(inv.Network[0].Addresses, "192.0.2.7/24")
		}},
		{"session", func(inv *proto.Inventory) { inv.Sessions = append(inv.Sessions, proto.Session{Username: "eve"}) }},
		{"patch", func(inv *proto.Inventory) { inv.Patches = append(inv.Patches, pendingPatch("apt", "zsh", "1", "2")) }},
	}
	for _, tc := range differ {
		inv := clone(t, base)
		tc.change(&inv)
		require.NotEqual(t, h, Hash(inv), tc.name)
	}
}

// clone deep-copies an inventory so a test case cannot change base.
func clone(t *testing.T, inv proto.Inventory) proto.Inventory {
	t.Helper()
	out := inv
	hw := *inv.Hardware
	hw.Disks = append([]proto.Disk(nil), inv.Hardware.Disks...)
	out.Hardware = &hw
	up := *inv.Uptime
	out.Uptime = &up
	out.Network = nil
	for _, n := range inv.Network {
		n.Addresses = append([]string(nil), n.Addresses...)
		out.Network = append(out.Network, n)
	}
	out.Sessions = append([]proto.Session{}, inv.Sessions...)
	out.Software = append([]proto.Software(nil), inv.Software...)
	out.Services = append([]proto.Service(nil), inv.Services...)
	out.Processes = append([]proto.Process(nil), inv.Processes...)
	out.Patches = append([]proto.PatchEntry{}, inv.Patches...)
	return out
}
