// Package inventory turns the inventory an agent posts into the form the
// Engine stores: trimmed, de-duplicated, sorted and with timestamps in UTC,
// so that two posts describing the same machine encode to the same bytes
// and a change is recognised by comparing hashes.
package inventory

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/agent/proto"
)

// Collection names: the keys of part hashes and of the
// device_inventory_changed event's "parts".
const (
	PartHardware  = "hardware"
	PartOS        = "os"
	PartNetwork   = "network"
	PartSessions  = "sessions"
	PartUptime    = "uptime"
	PartSoftware  = "software"
	PartServices  = "services"
	PartProcesses = "processes"
	PartPatches   = "patches"
	// PartPatchStatus is the patch scan's machine-wide result (provider,
	// reboot required); it lives in device_patch_status.
	PartPatchStatus = "patch_status"
)

// Bounds on one details post; beyond them the post is refused rather than
// stored in part.
const (
	MaxNetwork   = 512
	MaxSessions  = 512
	MaxDisks     = 256
	MaxSoftware  = 20000
	MaxServices  = 10000
	MaxProcesses = 20000
	MaxPatches   = 20000
)

// Uptime is what is stored of the agent's uptime: the boot, not the
// running count, which would make every post a change. Readers compute
// the uptime from BootTime with the Engine's clock.
type Uptime struct {
	BootTime time.Time `json:"boot_time"`
	BootID   string    `json:"boot_id,omitempty"`
}

// Part is one reported collection in its stored encoding.
type Part struct {
	Name string
	JSON []byte
	// Hash is the hex SHA-256 of JSON.
	Hash string
}

// Normalized is a details inventory ready to store. A collection the agent
// did not report is nil and has no Part, so it leaves the stored one alone.
type Normalized struct {
	Hardware  *proto.Hardware
	OS        *proto.OSInfo
	Network   []proto.NetIface
	Sessions  []proto.Session
	Uptime    *Uptime
	Software  []proto.Software
	Services  []proto.Service
	Processes []proto.Process
	Patches   []Patch
	// PatchStatus is the patch scan's status (nil: not reported).
	PatchStatus *proto.PatchStatus
	// Parts are the reported collections, in a fixed order.
	Parts []Part
}

// Part returns the named part, if reported.
func (n Normalized) Part(name string) (Part, bool) {
	for _, p := range n.Parts {
		if p.Name == name {
			return p, true
		}
	}
	return Part{}, false
}

// Normalize validates and normalizes inv. Field names in errors are the
// JSON paths under "inventory".
func Normalize(inv proto.Inventory) (Normalized, error) {
	var v cairn.Validation
	limit := func(field string, n, max int) {
		if n > max {
			v.Add("inventory."+field, fmt.Sprintf("must have at most %d entries", max))
		}
	}
	limit(PartNetwork, len(inv.Network), MaxNetwork)
	limit(PartSessions, len(inv.Sessions), MaxSessions)
	limit(PartSoftware, len(inv.Software), MaxSoftware)
	limit(PartServices, len(inv.Services), MaxServices)
	limit(PartProcesses, len(inv.Processes), MaxProcesses)
	limit(PartPatches, len(inv.Patches), MaxPatches)
	if inv.Hardware != nil {
		limit("hardware.disks", len(inv.Hardware.Disks), MaxDisks)
	}
	if inv.Uptime != nil && inv.Uptime.BootTime.IsZero() {
		v.Add("inventory.uptime.boot_time", "is required")
	}
	patches, err := normalizePatches(inv.Patches)
	if err != nil {
		return Normalized{}, err
	}
	patchStatus := normalizePatchStatus(inv.PatchStatus, &v)
	if err := v.Err(); err != nil {
		return Normalized{}, err
	}

	n := Normalized{
		Hardware: normalizeHardware(inv.Hardware), OS: normalizeOS(inv.OS),
		Network: normalizeNetwork(inv.Network), Sessions: normalizeSessions(inv.Sessions),
		Software: normalizeSoftware(inv.Software), Services: normalizeServices(inv.Services),
		Processes: normalizeProcesses(inv.Processes), Patches: patches, PatchStatus: patchStatus,
	}
	if inv.Uptime != nil {
		n.Uptime = &Uptime{BootTime: inv.Uptime.BootTime.UTC().Truncate(time.Second), BootID: strings.TrimSpace(inv.Uptime.BootID)}
	}
	for _, p := range []struct {
		name    string
		present bool
		value   any
	}{
		{PartHardware, n.Hardware != nil, n.Hardware},
		{PartOS, n.OS != nil, n.OS},
		{PartNetwork, n.Network != nil, n.Network},
		{PartSessions, n.Sessions != nil, n.Sessions},
		{PartUptime, n.Uptime != nil, n.Uptime},
		{PartSoftware, n.Software != nil, n.Software},
		{PartServices, n.Services != nil, n.Services},
		{PartProcesses, n.Processes != nil, n.Processes},
		{PartPatches, n.Patches != nil, n.Patches},
		{PartPatchStatus, n.PatchStatus != nil, n.PatchStatus},
	} {
		if !p.present {
			continue
		}
		b, err := json.Marshal(p.value)
		if err != nil {
			return Normalized{}, err
		}
		sum := sha256.Sum256(b)
		n.Parts = append(n.Parts, Part{Name: p.name, JSON: b, Hash: hex.EncodeToString(sum[:])})
	}
	return n, nil
}

// Software text limits (runes); longer values are cut.
const (
	MaxSoftwareName      = 256
	MaxSoftwareVersion   = 128
	MaxSoftwarePublisher = 256
)

// clip cuts s to at most n runes.
func clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return strings.TrimSpace(string([]rune(s)[:n]))
}

// SoftwareKey is the form filters match software names on.
func SoftwareKey(name string) string { return strings.ToLower(strings.TrimSpace(name)) }

func utc(t time.Time) time.Time {
	if t.IsZero() {
		return time.Time{}
	}
	return t.UTC()
}

func utcPtr(t *time.Time) *time.Time {
	if t == nil || t.IsZero() {
		return nil
	}
	u := t.UTC()
	return &u
}

func normalizeHardware(h *proto.Hardware) *proto.Hardware {
	if h == nil {
		return nil
	}
	out := *h
	out.CPUModel = strings.TrimSpace(out.CPUModel)
	out.Disks = slices.Clone(h.Disks)
	if out.Disks == nil {
		out.Disks = []proto.Disk{}
	}
	slices.SortStableFunc(out.Disks, func(a, b proto.Disk) int {
		return cmp.Or(cmp.Compare(a.Name, b.Name), cmp.Compare(a.Mountpoint, b.Mountpoint))
	})
	return &out
}

func normalizeOS(o *proto.OSInfo) *proto.OSInfo {
	if o == nil {
		return nil
	}
	out := *o
	out.Family = strings.ToLower(strings.TrimSpace(out.Family))
	out.Name = strings.TrimSpace(out.Name)
	out.Hostname = strings.TrimSpace(out.Hostname)
	return &out
}

func normalizeNetwork(in []proto.NetIface) []proto.NetIface {
	if in == nil {
		return nil
	}
	out := make([]proto.NetIface, 0, len(in))
	for _, n := range in {
		n.Name = strings.TrimSpace(n.Name)
		n.MAC = strings.ToLower(strings.TrimSpace(n.MAC))
		n.Addresses = slices.Clone(n.Addresses)
		if n.Addresses == nil {
			n.Addresses = []string{}
		}
		slices.Sort(n.Addresses)
		out = append(out, n)
	}
	slices.SortStableFunc(out, func(a, b proto.NetIface) int { return cmp.Compare(a.Name, b.Name) })
	return out
}

// The normalizers below sort on every field that matters before dropping
// repeats, so which of two repeats is kept never depends on the order the
// agent listed them in: the same machine always hashes the same.

// normalizeSessions keeps sessions with a user, lower-cases the session
// type and drops repeats of a user, session and terminal (a session seen
// through two sources), preferring the active, helper-ready report.
func normalizeSessions(in []proto.Session) []proto.Session {
	if in == nil {
		return nil
	}
	out := make([]proto.Session, 0, len(in))
	for _, s := range in {
		s.Username = strings.TrimSpace(s.Username)
		if s.Username == "" {
			continue
		}
		s.TTY, s.Remote, s.SessionID = strings.TrimSpace(s.TTY), strings.TrimSpace(s.Remote), strings.TrimSpace(s.SessionID)
		s.Type = strings.ToLower(strings.TrimSpace(s.Type))
		s.LoginAt = utcPtr(s.LoginAt)
		out = append(out, s)
	}
	same := func(a, b proto.Session) int {
		return cmp.Or(cmp.Compare(strings.ToLower(a.Username), strings.ToLower(b.Username)), cmp.Compare(a.Username, b.Username),
			cmp.Compare(a.SessionID, b.SessionID), cmp.Compare(a.TTY, b.TTY))
	}
	slices.SortFunc(out, func(a, b proto.Session) int {
		return cmp.Or(same(a, b), -cmpBool(a.Active, b.Active), -cmpBool(a.HelperReady, b.HelperReady),
			cmp.Compare(a.Type, b.Type), cmp.Compare(a.Remote, b.Remote), cmpTime(a.LoginAt, b.LoginAt))
	})
	return slices.CompactFunc(out, func(a, b proto.Session) bool { return same(a, b) == 0 })
}

// normalizeSoftware drops nameless entries and repeats of a name and
// version (both keys of device_software), preferring the report with a
// publisher.
func normalizeSoftware(in []proto.Software) []proto.Software {
	if in == nil {
		return nil
	}
	out := make([]proto.Software, 0, len(in))
	for _, s := range in {
		// Bounded so that a variant fits the keys it is stored and
		// counted under (device_software, the software audit aggregate).
		s.Name = clip(strings.TrimSpace(s.Name), MaxSoftwareName)
		s.Version = clip(strings.TrimSpace(s.Version), MaxSoftwareVersion)
		s.Publisher = clip(strings.TrimSpace(s.Publisher), MaxSoftwarePublisher)
		if SoftwareKey(s.Name) == "" {
			continue
		}
		s.InstalledAt = utcPtr(s.InstalledAt)
		out = append(out, s)
	}
	same := func(a, b proto.Software) int {
		return cmp.Or(cmp.Compare(SoftwareKey(a.Name), SoftwareKey(b.Name)), cmp.Compare(a.Version, b.Version))
	}
	slices.SortFunc(out, func(a, b proto.Software) int {
		return cmp.Or(same(a, b), cmpBool(a.Publisher == "", b.Publisher == ""), cmp.Compare(a.Name, b.Name),
			cmp.Compare(a.Publisher, b.Publisher), cmp.Compare(a.Source, b.Source), cmp.Compare(a.Arch, b.Arch),
			cmp.Compare(a.SizeBytes, b.SizeBytes), cmpTime(a.InstalledAt, b.InstalledAt))
	})
	return slices.CompactFunc(out, func(a, b proto.Software) bool { return same(a, b) == 0 })
}

// normalizeServices drops nameless services and repeats of a name.
func normalizeServices(in []proto.Service) []proto.Service {
	if in == nil {
		return nil
	}
	out := make([]proto.Service, 0, len(in))
	for _, s := range in {
		s.Name = strings.TrimSpace(s.Name)
		if s.Name == "" {
			continue
		}
		s.State = strings.ToLower(strings.TrimSpace(s.State))
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b proto.Service) int {
		return cmp.Or(cmp.Compare(a.Name, b.Name), cmp.Compare(a.State, b.State), cmp.Compare(a.SubState, b.SubState),
			cmp.Compare(a.StartMode, b.StartMode), cmp.Compare(a.DisplayName, b.DisplayName), cmp.Compare(a.Description, b.Description))
	})
	return slices.CompactFunc(out, func(a, b proto.Service) bool { return a.Name == b.Name })
}

// normalizeProcesses drops repeats of a PID.
func normalizeProcesses(in []proto.Process) []proto.Process {
	if in == nil {
		return nil
	}
	out := make([]proto.Process, 0, len(in))
	for _, p := range in {
		p.StartedAt = utc(p.StartedAt)
		out = append(out, p)
	}
	slices.SortFunc(out, func(a, b proto.Process) int {
		return cmp.Or(cmp.Compare(a.PID, b.PID), cmp.Compare(a.Name, b.Name), cmp.Compare(a.Command, b.Command),
			cmp.Compare(a.User, b.User), cmp.Compare(a.PPID, b.PPID), a.StartedAt.Compare(b.StartedAt),
			cmp.Compare(a.CPUPercent, b.CPUPercent), cmp.Compare(a.RSSBytes, b.RSSBytes))
	})
	return slices.CompactFunc(out, func(a, b proto.Process) bool { return a.PID == b.PID })
}

// cmpBool orders false before true.
func cmpBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case !a:
		return -1
	}
	return 1
}

// cmpTime orders nil first.
func cmpTime(a, b *time.Time) int {
	switch {
	case a == nil && b == nil:
		return 0
	case a == nil:
		return -1
	case b == nil:
		return 1
	}
	return a.Compare(*b)
}

// Addresses are the distinct host addresses of the network inventory
// (prefix lengths and IPv6 zones dropped), the form ip_address filters
// match on; an address that does not parse is skipped.
func Addresses(network []proto.NetIface) []netip.Addr {
	var out []netip.Addr
	for _, n := range network {
		for _, a := range n.Addresses {
			a = strings.TrimSpace(a)
			if p, err := netip.ParsePrefix(a); err == nil {
				a = p.Addr().String()
			} else if before, _, ok := strings.Cut(a, "/"); ok {
				a = before
			}
			addr, err := netip.ParseAddr(a)
			if err != nil {
				continue
			}
			out = append(out, addr.WithZone("").Unmap())
		}
	}
	slices.SortFunc(out, func(a, b netip.Addr) int { return a.Compare(b) })
	return slices.Compact(out)
}
