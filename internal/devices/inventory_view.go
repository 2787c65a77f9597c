package devices

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/db"
	"github.com/cairn-rmm/cairn/internal/inventory"
)

// Uptime is the stored boot with the uptime counted by the Engine's clock.
type Uptime struct {
	BootTime      time.Time
	BootID        string
	UptimeSeconds int64
}

// PatchRow is one stored patch row.
type PatchRow struct {
	Key              string
	KB               string
	Title            string
	UpdateID         string
	Revision         int32
	State            string
	Source           string
	Package          string
	InstalledVersion string
	CandidateVersion string
	Severity         string
	InstalledAt      *time.Time
	UpdatedAt        time.Time
}

// FullDetails is everything known about one device. A collection the
// agent never reported is nil; one reported empty is empty.
type FullDetails struct {
	Device    Device
	Hardware  *proto.Hardware
	OS        *proto.OSInfo
	Network   []proto.NetIface
	Sessions  []proto.Session
	Uptime    *Uptime
	Software  []proto.Software
	Services  []proto.Service
	Processes []proto.Process
	Patches   []PatchRow
	Health    AgentHealth
	// LastStatus is the agent's last status post (nil before the first).
	LastStatus  *StatusRecord
	CollectedAt *time.Time
	// InventoryUpdatedAt is when the Engine last stored a details post.
	InventoryUpdatedAt *time.Time
}

// DetailsByHostname returns the full details of a device inside scope.
func (s *Service) DetailsByHostname(ctx context.Context, scope cairn.SiteScope, hostname string) (FullDetails, error) {
	row, err := s.hostRow(ctx, scope, hostname)
	if err != nil {
		return FullDetails{}, err
	}
	now := s.now()
	dev := s.device(row.Device, row.SiteName, row.SiteSlug, now)
	out := FullDetails{Device: dev}
	// last_status is '{}' until the first status post.
	if len(row.Device.LastStatus) > 2 {
		var rec StatusRecord
		if err := json.Unmarshal(row.Device.LastStatus, &rec); err != nil {
			return FullDetails{}, fmt.Errorf("device %s: decode last_status: %w", dev.GUID, err)
		}
		out.LastStatus = &rec
	}
	inv, err := s.store.DeviceInventoryGet(ctx, dev.GUID)
	switch {
	case db.IsNoRows(err):
	case err != nil:
		return FullDetails{}, err
	default:
		if err := decodeInventory(&out, inv, now); err != nil {
			return FullDetails{}, err
		}
		out.CollectedAt, out.InventoryUpdatedAt = inv.CollectedAt, &inv.UpdatedAt
	}
	patches, err := s.store.DevicePatchList(ctx, dev.GUID)
	if err != nil {
		return FullDetails{}, err
	}
	if inv.PartHashes != nil && hasPart(inv.PartHashes, inventory.PartPatches) {
		out.Patches = make([]PatchRow, len(patches))
		for i, p := range patches {
			out.Patches[i] = PatchRow{Key: p.PatchKey, KB: p.Kb, Title: p.Title, UpdateID: p.UpdateID, Revision: p.Revision,
				State: p.State, Source: p.Source, Package: p.Package, InstalledVersion: p.InstalledVersion,
				CandidateVersion: p.CandidateVersion, Severity: p.Severity, InstalledAt: p.InstalledAt, UpdatedAt: p.UpdatedAt}
		}
	}
	roles, err := s.store.DeviceRoleList(ctx, dev.GUID)
	if err != nil {
		return FullDetails{}, err
	}
	out.Health = groupRoles(roles)
	return out, nil
}

func hasPart(partHashes []byte, name string) bool {
	var m map[string]string
	return json.Unmarshal(partHashes, &m) == nil && m[name] != ""
}

// decodeInventory reads the stored collections back; a NULL column (never
// reported) stays nil.
func decodeInventory(out *FullDetails, inv db.DeviceInventory, now time.Time) error {
	var up *inventory.Uptime
	for _, c := range []struct {
		raw []byte
		dst any
	}{
		{inv.Hardware, &out.Hardware}, {inv.Os, &out.OS}, {inv.Network, &out.Network}, {inv.Sessions, &out.Sessions},
		{inv.Uptime, &up}, {inv.Software, &out.Software}, {inv.Services, &out.Services}, {inv.Processes, &out.Processes},
	} {
		if c.raw == nil {
			continue
		}
		if err := json.Unmarshal(c.raw, c.dst); err != nil {
			return err
		}
	}
	if up != nil {
		out.Uptime = &Uptime{BootTime: up.BootTime, BootID: up.BootID, UptimeSeconds: max(0, int64(now.Sub(up.BootTime).Seconds()))}
	}
	return nil
}
