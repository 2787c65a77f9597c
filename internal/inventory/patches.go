package inventory

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/agent/proto"
)

// Patch is a normalized patch row: the agent's entry plus its key.
type Patch struct {
	Key string `json:"patch_key"`
	proto.PatchEntry
}

// PatchKey is a patch's identity on one device (SPEC "Patch inventory
// row": KB first). The same KB reported by Windows Update history and by
// QFE is one row; an update without a KB is known by its update ID, a
// Linux package update by its package and version (the candidate of a
// pending row, the version installed of a history row, so the history row
// of an install has the pending row's key), anything else by its title.
func PatchKey(p proto.PatchEntry) string {
	switch {
	case NormalizeKB(p.KB) != "":
		return "kb:" + NormalizeKB(p.KB)
	case strings.TrimSpace(p.UpdateID) != "":
		// Update IDs are GUIDs, whose case carries no meaning.
		return "update:" + strings.ToLower(strings.TrimSpace(p.UpdateID))
	case strings.TrimSpace(p.Package) != "":
		v := strings.TrimSpace(cmp.Or(strings.TrimSpace(p.CandidateVersion), p.InstalledVersion))
		if v == "" {
			return "pkg:" + strings.TrimSpace(p.Package)
		}
		return "pkg:" + strings.TrimSpace(p.Package) + "=" + v
	case strings.TrimSpace(p.Title) != "":
		return "title:" + strings.ToLower(strings.Join(strings.Fields(p.Title), " "))
	}
	return ""
}

// NormalizeKB writes a KB number the one way: "kb 5034441", "5034441" and
// "KB5034441" are all "KB5034441". Anything else is upper-cased as is.
func NormalizeKB(kb string) string {
	kb = strings.ToUpper(strings.Join(strings.Fields(kb), ""))
	digits := strings.TrimPrefix(kb, "KB")
	if digits != "" && strings.Trim(digits, "0123456789") == "" {
		return "KB" + digits
	}
	return kb
}

// normalizePatches keys, validates and de-duplicates patch entries. When
// one key is reported more than once, an installed report wins over a
// pending one (the update history and QFE outrank a stale pending list);
// among equals the choice is by source and title, never by the order the
// agent listed them in.
func normalizePatches(in []proto.PatchEntry) ([]Patch, error) {
	if in == nil {
		return nil, nil
	}
	var v cairn.Validation
	out := make([]Patch, 0, len(in))
	for i, p := range in {
		field := fmt.Sprintf("inventory.patches[%d]", i)
		p.KB = NormalizeKB(p.KB)
		p.Title = strings.TrimSpace(p.Title)
		p.UpdateID = strings.TrimSpace(p.UpdateID)
		p.Package = strings.TrimSpace(p.Package)
		p.Source = strings.TrimSpace(p.Source)
		p.InstalledAt = utcPtr(p.InstalledAt)
		p.ReleasedAt = utcPtr(p.ReleasedAt)
		p.Origin = clip(strings.TrimSpace(p.Origin), MaxPatchText)
		p.Severity = clip(strings.TrimSpace(p.Severity), MaxPatchText)
		p.RebootBehavior = strings.TrimSpace(p.RebootBehavior)
		// kbs holds every KB of the row, its kb first (the audit's KB
		// filter reads kbs alone).
		p.KBs = normalizeKBs(append([]string{p.KB}, p.KBs...))
		p.Categories = cleanList(p.Categories)
		key := PatchKey(p)
		switch {
		case key == "":
			v.Add(field+".title", "a patch needs a kb, update_id, package or title")
		case p.State != proto.PatchPending && p.State != proto.PatchInstalled:
			v.Add(field+".state", "must be pending or installed")
		case p.Source == "":
			v.Add(field+".source", "is required")
		case p.Revision < 0 || p.Revision > 1<<31-1:
			v.Add(field+".revision", "must be a non-negative 32-bit integer")
		case p.SizeBytes < 0:
			v.Add(field+".size_bytes", "must not be negative")
		case len(p.KBs) > MaxPatchList:
			v.Add(field+".kbs", fmt.Sprintf("must have at most %d entries", MaxPatchList))
		case len(p.Categories) > MaxPatchList:
			v.Add(field+".categories", fmt.Sprintf("must have at most %d entries", MaxPatchList))
		}
		if key == "" {
			continue
		}
		if p.Title == "" {
			// device_patches.title is what the console lists; fall back to
			// the identity the row was keyed by.
			p.Title = cmp.Or(p.KB, p.Package, p.UpdateID)
		}
		out = append(out, Patch{Key: key, PatchEntry: p})
	}
	if err := v.Err(); err != nil {
		return nil, err
	}
	slices.SortFunc(out, func(a, b Patch) int {
		return cmp.Or(cmp.Compare(a.Key, b.Key), cmpBool(a.State != proto.PatchInstalled, b.State != proto.PatchInstalled),
			cmp.Compare(a.Source, b.Source), cmp.Compare(a.Title, b.Title), cmp.Compare(a.UpdateID, b.UpdateID),
			-cmp.Compare(a.Revision, b.Revision), cmp.Compare(a.CandidateVersion, b.CandidateVersion),
			cmp.Compare(a.InstalledVersion, b.InstalledVersion), cmpTime(a.InstalledAt, b.InstalledAt))
	})
	return slices.CompactFunc(out, func(a, b Patch) bool { return a.Key == b.Key }), nil
}

// Patch text limits: lists per row and the length of origin and severity.
const (
	MaxPatchList   = 32
	MaxPatchText   = 256
	MaxRebootPkgs  = 512
	maxPatchStatus = 64
)

// normalizeKBs writes each KB the one way, without repeats (nil when none,
// so an empty list and no list hash the same).
func normalizeKBs(in []string) []string {
	var out []string
	for _, k := range in {
		if k = NormalizeKB(k); k != "" && !slices.Contains(out, k) {
			out = append(out, k)
		}
	}
	return out
}

// cleanList trims, clips and drops empty entries and repeats, keeping the
// order the agent gave (nil when none).
func cleanList(in []string) []string {
	var out []string
	for _, s := range in {
		if s = clip(strings.TrimSpace(s), MaxPatchText); s != "" && !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// normalizePatchStatus validates the scan's status; nil stays nil (not
// reported: the stored status stays).
func normalizePatchStatus(st *proto.PatchStatus, v *cairn.Validation) *proto.PatchStatus {
	if st == nil {
		return nil
	}
	out := proto.PatchStatus{Provider: strings.TrimSpace(st.Provider), RebootRequired: st.RebootRequired}
	if out.Provider == "" || len(out.Provider) > maxPatchStatus {
		v.Add("inventory.patch_status.provider", "is required, at most 64 characters")
	}
	if len(st.RebootPackages) > MaxRebootPkgs {
		v.Add("inventory.patch_status.reboot_packages", fmt.Sprintf("must have at most %d entries", MaxRebootPkgs))
	}
	out.RebootPackages = cleanList(st.RebootPackages)
	slices.Sort(out.RebootPackages)
	return &out
}
