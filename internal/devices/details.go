package devices

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"maps"
	"slices"
	"strings"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/db"
	"github.com/cairn-rmm/cairn/internal/devicetrust"
	"github.com/cairn-rmm/cairn/internal/events"
	"github.com/cairn-rmm/cairn/internal/inventory"
	"github.com/cairn-rmm/cairn/internal/software"
)

// Details stores a device's inventory. Each reported collection replaces
// the stored one; a collection the agent left out (nil) stays as it was,
// patch rows included. Whether anything changed is decided by comparing
// the SHA-256 of each collection's stored encoding with the one stored
// last time, so an unchanged post writes no collection and emits nothing;
// device_inventory_changed names the collections that changed and
// device_services_changed follows a change of services only.
func (s *Service) Details(ctx context.Context, id devicetrust.Identity, d proto.Details) (proto.DetailsResponse, error) {
	if err := s.softwareIcons(ctx, id.GUID, &d.Inventory); err != nil {
		return proto.DetailsResponse{}, err
	}
	inv, err := inventory.Normalize(d.Inventory)
	if err != nil {
		return proto.DetailsResponse{}, err
	}
	var v cairn.Validation
	checkRoles(&v, "roles", d.Roles)
	if err := v.Err(); err != nil {
		return proto.DetailsResponse{}, err
	}
	now := s.now()
	roles, err := roleRows(id.GUID, d.Roles, now)
	if err != nil {
		return proto.DetailsResponse{}, err
	}
	collected := now
	if !d.CollectedAt.IsZero() {
		collected = d.CollectedAt.UTC()
	}

	var (
		dev     db.DeviceLockForInventoryRow
		changed []string
	)
	err = s.store.InTx(ctx, func(q *db.Queries) error {
		changed = nil
		dev, err = q.DeviceLockForInventory(ctx, id.GUID)
		if err != nil {
			return db.NotFound(err, "this device is not enrolled")
		}
		stored := map[string]string{}
		raw, err := q.DeviceInventoryHashes(ctx, id.GUID)
		if err != nil && !db.IsNoRows(err) {
			return err
		}
		if len(raw) > 0 {
			if err := json.Unmarshal(raw, &stored); err != nil {
				return err
			}
		}
		merged := maps.Clone(stored)
		up := db.DeviceInventoryUpsertParams{DeviceGuid: id.GUID, CollectedAt: &collected}
		for _, p := range inv.Parts {
			merged[p.Name] = p.Hash
			if p.Name == inventory.PartServices {
				up.ServicesHash = p.Hash
			}
			if stored[p.Name] == p.Hash {
				continue
			}
			changed = append(changed, p.Name)
			setColumn(&up, p)
		}
		up.Hash = overallHash(merged)
		if up.PartHashes, err = json.Marshal(merged); err != nil {
			return err
		}
		if err := q.DeviceInventoryUpsert(ctx, up); err != nil {
			return err
		}
		if err := storeRows(ctx, q, dev.Guid, dev.SiteID, inv, changed); err != nil {
			return err
		}
		return upsertRoles(ctx, q, roles)
	})
	if err != nil {
		return proto.DetailsResponse{}, err
	}
	s.detailsStored(id.GUID)
	if len(changed) > 0 {
		s.publish(ctx, events.TypeDeviceInventoryChanged, dev.SiteID, deviceEvent{GUID: dev.Guid, Hostname: dev.Hostname, SiteID: dev.SiteID, Parts: changed})
	}
	if slices.Contains(changed, inventory.PartServices) {
		s.publish(ctx, events.TypeDeviceServicesChanged, dev.SiteID, deviceEvent{GUID: dev.Guid, Hostname: dev.Hostname, SiteID: dev.SiteID})
	}
	return proto.DetailsResponse{Changed: len(changed) > 0}, nil
}

// softwareIcons stores the icons an agent sent with its software (issue
// 27 item 7) and keeps on each row only an icon_hash the Engine can
// serve: one sent now that checks out (its bytes hash to it and
// software.SniffIcon takes them: an SVG with scripts is dropped) or one
// stored already (an uploaded override's, which agents name without its
// bytes). Icons are stored before the inventory's transaction and apart
// from it: they are content-addressed, so a retried post stores nothing
// twice, and an icon stored for a post that then failed is simply there
// for the retry.
func (s *Service) softwareIcons(ctx context.Context, guid cairn.DeviceGUID, inv *proto.Inventory) error {
	icons := inv.SoftwareIcons
	inv.SoftwareIcons = nil
	if inv.Software == nil {
		return nil
	}
	ok := map[string]bool{}
	for _, ic := range icons {
		sum := sha256.Sum256(ic.Data)
		if hex.EncodeToString(sum[:]) != ic.Hash {
			continue
		}
		ct, err := software.SniffIcon("software_icons", ic.Data)
		if err != nil {
			continue
		}
		if err := s.store.SoftwareIconInsert(ctx, db.SoftwareIconInsertParams{Hash: ic.Hash, ContentType: ct, Data: ic.Data,
			CreatedBy: "agent:" + string(guid)}); err != nil {
			return err
		}
		ok[ic.Hash] = true
	}
	var ask []string
	for _, r := range inv.Software {
		if r.IconHash != "" && !ok[r.IconHash] {
			ask = append(ask, r.IconHash)
		}
	}
	if len(ask) > 0 {
		known, err := s.store.SoftwareIconsKnown(ctx, ask)
		if err != nil {
			return err
		}
		for _, h := range known {
			ok[h] = true
		}
	}
	rows := slices.Clone(inv.Software)
	for i := range rows {
		if !ok[rows[i].IconHash] {
			rows[i].IconHash = ""
		}
	}
	inv.Software = rows
	return nil
}

// setColumn puts a changed collection into its device_inventory column;
// patches live in their own table.
func setColumn(up *db.DeviceInventoryUpsertParams, p inventory.Part) {
	switch p.Name {
	case inventory.PartHardware:
		up.Hardware = p.JSON
	case inventory.PartOS:
		up.Os = p.JSON
	case inventory.PartNetwork:
		up.Network = p.JSON
	case inventory.PartSessions:
		up.Sessions = p.JSON
	case inventory.PartUptime:
		up.Uptime = p.JSON
	case inventory.PartSoftware:
		up.Software = p.JSON
	case inventory.PartServices:
		up.Services = p.JSON
	case inventory.PartProcesses:
		up.Processes = p.JSON
	}
}

// storeRows writes what lives outside device_inventory for the changed
// collections: the operating system on the device, software (with the
// device's site, which the software audit's aggregate is kept per) and IP
// addresses in the form filters match on, and patch rows, each replaced
// whole with COPY.
func storeRows(ctx context.Context, q *db.Queries, guid cairn.DeviceGUID, siteID cairn.SiteID, inv inventory.Normalized, changed []string) error {
	if slices.Contains(changed, inventory.PartOS) {
		name := cmp.Or(inv.OS.Name, strings.TrimSpace(inv.OS.Family+" "+inv.OS.Version))
		if err := q.DeviceOperatingSystemSet(ctx, db.DeviceOperatingSystemSetParams{Guid: guid, OperatingSystem: name}); err != nil {
			return err
		}
	}
	if slices.Contains(changed, inventory.PartSoftware) {
		if err := q.DeviceSoftwareDelete(ctx, guid); err != nil {
			return err
		}
		rows := make([]db.DeviceSoftwareInsertParams, len(inv.Software))
		for i, sw := range inv.Software {
			rows[i] = db.DeviceSoftwareInsertParams{DeviceGuid: guid, SiteID: siteID, NameKey: inventory.SoftwareKey(sw.Name),
				Name: sw.Name, Version: sw.Version, Publisher: sw.Publisher}
		}
		if _, err := q.DeviceSoftwareInsert(ctx, rows); err != nil {
			return err
		}
	}
	if slices.Contains(changed, inventory.PartNetwork) {
		if err := q.DeviceAddressDelete(ctx, guid); err != nil {
			return err
		}
		addrs := inventory.Addresses(inv.Network)
		rows := make([]db.DeviceAddressInsertParams, len(addrs))
		for i, a := range addrs {
			rows[i] = db.DeviceAddressInsertParams{DeviceGuid: guid, Address: a}
		}
		if _, err := q.DeviceAddressInsert(ctx, rows); err != nil {
			return err
		}
	}
	if slices.Contains(changed, inventory.PartPatches) {
		if err := q.DevicePatchDelete(ctx, guid); err != nil {
			return err
		}
		rows := make([]db.DevicePatchInsertParams, len(inv.Patches))
		for i, p := range inv.Patches {
			rows[i] = db.DevicePatchInsertParams{DeviceGuid: guid, PatchKey: p.Key, Kb: p.KB, Title: p.Title,
				UpdateID: p.UpdateID, Revision: int32(p.Revision), State: p.State, Source: p.Source, Package: p.Package,
				InstalledVersion: p.InstalledVersion, CandidateVersion: p.CandidateVersion, Severity: p.Severity,
				InstalledAt: p.InstalledAt, Security: p.Security, Origin: p.Origin, Kbs: nonNil(p.KBs),
				Categories: nonNil(p.Categories), RebootBehavior: p.RebootBehavior, SizeBytes: p.SizeBytes,
				ReleasedAt: p.ReleasedAt}
		}
		if _, err := q.DevicePatchInsert(ctx, rows); err != nil {
			return err
		}
	}
	if slices.Contains(changed, inventory.PartPatchStatus) {
		st := inv.PatchStatus
		if err := q.DevicePatchStatusUpsert(ctx, db.DevicePatchStatusUpsertParams{DeviceGuid: guid, Provider: st.Provider,
			RebootRequired: st.RebootRequired, RebootPackages: nonNil(st.RebootPackages)}); err != nil {
			return err
		}
	}
	return nil
}

// overallHash is device_inventory.hash: one value over every stored
// collection's hash, in name order.
func overallHash(parts map[string]string) string {
	h := sha256.New()
	for _, name := range slices.Sorted(maps.Keys(parts)) {
		h.Write([]byte(name + ":" + parts[name] + "\n"))
	}
	return hex.EncodeToString(h.Sum(nil))
}
