package devicefilters_test

import (
	"context"
	"testing"
	"time"

	"github.com/cairn-rmm/cairn"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/db"
	"github.com/cairn-rmm/cairn/internal/devices"
	"github.com/cairn-rmm/cairn/internal/devicetrust"
	"github.com/cairn-rmm/cairn/internal/events"
)

type quiet struct{}

func (quiet) Publish(context.Context, events.Event) error { return nil }

// seedDevice is one device of the seeded fleet: its row, and the
// inventory it posts through the real details path (so addresses and
// version keys are what ingest writes).
type seedDevice struct {
	guid, hostname, site, description, os, agentVersion, trust string
	seen, socket                                               *time.Duration
	users                                                      []string
	inventory                                                  *proto.Inventory
	pending, installed                                         int
}

func age(d time.Duration) *time.Duration { return &d }

// fleet seeds four devices over two sites:
//
//	web-1    alpha  Connected     Ubuntu 22.04, agent 1.4.2, Chrome 120, OpenSSL 3.0.2, 10.0.0.5, 2 pending patches
//	web-2    alpha  Disconnected  Ubuntu 20.04, agent 1.3.9, Chrome 119, openssl 1.1.1f, 10.0.1.7, no patches
//	db-1     beta   Offline       Windows Server 2022, agent 1.4.10, quarantined, SQL Server, 192.168.1.5 + 2001:db8::5, 5 pending
//	never-1  beta   Offline       never seen, revoked, no inventory
func (f *fixture) fleet(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	gib := uint64(1 << 30)
	for _, d := range []seedDevice{
		{guid: "g-web-1", hostname: "web-1", site: "alpha", description: "Front web server", os: "Ubuntu 22.04.3 LTS", agentVersion: "1.4.2",
			trust: "active", seen: age(10 * time.Second), socket: age(10 * time.Second), users: []string{"alice", "bob"},
			inventory: &proto.Inventory{
				OS: &proto.OSInfo{Family: "linux", Name: "Ubuntu 22.04.3 LTS", Version: "22.04"},
				Hardware: &proto.Hardware{CPUModel: "Intel Xeon E5", CPUCores: 8, MemoryTotalBytes: 16 * gib,
					Disks: []proto.Disk{{Name: "sda", SizeBytes: 500e9, FreeBytes: 200e9}, {Name: "sdb", SizeBytes: 100e9, FreeBytes: 50e9}}},
				Network:  []proto.NetIface{{Name: "eth0", Addresses: []string{"10.0.0.5/24", "fe80::1%eth0/64"}}},
				Software: []proto.Software{{Name: "Google Chrome", Version: "120.0.6099.130"}, {Name: "OpenSSL", Version: "3.0.2-0ubuntu1.10"}},
			}, pending: 2, installed: 1},
		{guid: "g-web-2", hostname: "web-2", site: "alpha", os: "Ubuntu 20.04.6 LTS", agentVersion: "1.3.9", trust: "active",
			seen: age(30 * time.Second), users: []string{"carol"},
			inventory: &proto.Inventory{
				OS:       &proto.OSInfo{Family: "linux", Name: "Ubuntu 20.04.6 LTS", Version: "20.04"},
				Hardware: &proto.Hardware{CPUModel: "AMD EPYC", CPUCores: 4, MemoryTotalBytes: 8 * gib},
				Network:  []proto.NetIface{{Name: "eth0", Addresses: []string{"10.0.1.7/16"}}},
				Software: []proto.Software{{Name: "Google Chrome", Version: "119.0.1"}, {Name: "openssl", Version: "1.1.1f-1ubuntu2"}},
			}},
		{guid: "g-db-1", hostname: "db-1", site: "beta", description: "Primary DATABASE", os: "Windows Server 2022", agentVersion: "1.4.10",
			trust: "quarantined", seen: age(10 * time.Minute), socket: age(10 * time.Second), users: []string{},
			inventory: &proto.Inventory{
				OS:       &proto.OSInfo{Family: "windows", Name: "Windows Server 2022", Version: "10.0.20348"},
				Hardware: &proto.Hardware{CPUCores: 16, MemoryTotalBytes: 64 * gib, Disks: []proto.Disk{{Name: "C:", SizeBytes: 2e12, FreeBytes: 1e12}}},
				Network:  []proto.NetIface{{Name: "Ethernet", Addresses: []string{"192.168.1.5/24", "2001:db8::5/64"}}},
				Software: []proto.Software{{Name: "Microsoft SQL Server 2022", Version: "16.0.1000.6"}},
			}, pending: 5},
		{guid: "g-never-1", hostname: "never-1", site: "beta", trust: "revoked"},
	} {
		_, err := f.store.DeviceInsert(ctx, db.DeviceInsertParams{Guid: cairn.DeviceGUID(d.guid), Hostname: d.hostname, SiteID: cairn.SiteID(f.sites[d.site])})
		require.NoError(t, err)
		f.exec(t, `UPDATE devices SET description = $2, operating_system = $3, agent_version = $4, trust_state = $5 WHERE guid = $1`,
			d.guid, d.description, d.os, d.agentVersion, d.trust)
		if d.seen != nil {
			f.exec(t, `UPDATE devices SET last_seen = $2, metrics = jsonb_build_object('logged_in_users', $3::text[]) WHERE guid = $1`,
				d.guid, now.Add(-*d.seen), d.users)
		}
		if d.socket != nil {
			f.exec(t, `UPDATE devices SET socket_replica = 'replica-1', socket_seen_at = $2 WHERE guid = $1`, d.guid, now.Add(-*d.socket))
		}
		if d.inventory != nil {
			svc := devices.NewService(f.store, quiet{}, devices.Config{})
			_, err := svc.Details(ctx, devicetrust.Identity{GUID: cairn.DeviceGUID(d.guid), Hostname: d.hostname, SiteID: cairn.SiteID(f.sites[d.site])},
				proto.Details{Inventory: *d.inventory})
			require.NoError(t, err)
		}
		for i := range d.pending + d.installed {
			state := "pending"
			if i >= d.pending {
				state = "installed"
			}
			f.exec(t, `INSERT INTO device_patches (device_guid, patch_key, title, state, source) VALUES ($1, $2, 'a patch', $3, 'apt')`,
				d.guid, "p"+string(rune('a'+i)), state)
		}
	}
}
