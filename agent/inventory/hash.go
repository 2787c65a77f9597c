package inventory

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"slices"

	"github.com/cairn-rmm/cairn/agent/proto"
)

// hashVersion starts the hashed bytes, so a change of what is hashed
// changes every hash once instead of colliding with old ones.
const hashVersion = "cairn-inventory-hash-v1\n"

// hashView is what Hash hashes: the inventory without its volatile parts,
// plus each mounted disk's used share in whole percent.
type hashView struct {
	proto.Inventory
	DiskUsedPercent map[string]int `json:"disk_used_percent,omitempty"`
}

// Hash is the hex SHA-256 of the canonical JSON of an inventory's
// meaningful content, so the agent posts details when something an
// operator would care about changed. Left out, because they change on
// every collection without anything happening:
//
//   - processes (the whole collection);
//   - uptime.uptime_seconds (boot time and boot ID stay: a reboot counts);
//   - disks' used_bytes and free_bytes, replaced by the used share in
//     whole percent, so filling a disk still changes the hash but a log
//     line does not.
//
// Collections are sorted (and interface addresses within each interface)
// before hashing, so the order a source lists them in does not matter. A
// nil collection (not collected) and an empty one hash differently.
func Hash(inv proto.Inventory) string {
	v := hashView{Inventory: inv}
	v.Processes = nil
	if inv.Uptime != nil {
		u := *inv.Uptime
		u.UptimeSeconds = 0
		v.Uptime = &u
	}
	if inv.Hardware != nil {
		hw := *inv.Hardware
		hw.Disks = slices.Clone(hw.Disks)
		for i := range hw.Disks {
			d := &hw.Disks[i]
			if size := d.UsedBytes + d.FreeBytes; size > 0 {
				if v.DiskUsedPercent == nil {
					v.DiskUsedPercent = map[string]int{}
				}
				v.DiskUsedPercent[d.Name] = int(d.UsedBytes * 100 / size)
			}
			d.UsedBytes, d.FreeBytes = 0, 0
		}
		slices.SortFunc(hw.Disks, func(a, b proto.Disk) int { return cmp.Compare(a.Name, b.Name) })
		v.Hardware = &hw
	}
	v.Network = slices.Clone(inv.Network)
	for i := range v.Network {
		v.Network[i].Addresses = slices.Clone(v.Network[i].Addresses)
		slices.Sort(v.Network[i].Addresses)
	}
	slices.SortFunc(v.Network, func(a, b proto.NetIface) int { return cmp.Compare(a.Name, b.Name) })
	v.Sessions = slices.Clone(inv.Sessions)
	sortSessions(v.Sessions)
	v.Software = slices.Clone(inv.Software)
	sortSoftware(v.Software)
	v.Services = slices.Clone(inv.Services)
	slices.SortFunc(v.Services, func(a, b proto.Service) int { return cmp.Compare(a.Name, b.Name) })
	v.Patches = slices.Clone(inv.Patches)
	slices.SortStableFunc(v.Patches, func(a, b proto.PatchEntry) int {
		return cmp.Or(cmp.Compare(a.Package, b.Package), cmp.Compare(a.KB, b.KB), cmp.Compare(a.Title, b.Title),
			cmp.Compare(a.CandidateVersion, b.CandidateVersion))
	})

	b, err := json.Marshal(v)
	if err != nil {
		// Inventory holds only strings, numbers, bools and times, which
		// always marshal; a failure here is a broken build.
		panic("inventory: hash: " + err.Error())
	}
	sum := sha256.Sum256(append([]byte(hashVersion), b...))
	return hex.EncodeToString(sum[:])
}

func sortSessions(s []proto.Session) {
	slices.SortFunc(s, func(a, b proto.Session) int {
		return cmp.Or(cmp.Compare(a.Username, b.Username), cmp.Compare(a.TTY, b.TTY), cmp.Compare(a.SessionID, b.SessionID))
	})
}
