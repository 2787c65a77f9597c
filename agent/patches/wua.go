package patches

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/cairn-rmm/cairn/agent/proto"
)

// WUA is the Windows Update Agent as the Windows provider reads it. The
// real one (wua_windows.go) drives COM; Wine does not implement WUA, so
// tests give a recorded fake.
type WUA interface {
	// Search runs IUpdateSearcher.Search with criteria.
	Search(ctx context.Context, criteria string) ([]WUAUpdate, error)
	// History is IUpdateSearcher.QueryHistory over the whole history.
	History(ctx context.Context) ([]WUAHistoryEntry, error)
	// QuickFixes are Win32_QuickFixEngineering's rows.
	QuickFixes(ctx context.Context) ([]QuickFix, error)
	// RebootRequired is ISystemInformation.RebootRequired.
	RebootRequired(ctx context.Context) (bool, error)
}

// ErrNoWUA: this machine has no Windows Update Agent to ask (its COM
// classes are not registered: Wine, stripped images). Retrying cannot help.
var ErrNoWUA = errors.New("the Windows Update Agent is not available")

// PendingCriteria is the search for updates to offer: not installed and
// not hidden by an administrator.
const PendingCriteria = "IsInstalled=0 and IsHidden=0"

// WUAUpdate is the part of an IUpdate the inventory reports.
type WUAUpdate struct {
	UpdateID     string    `json:"update_id"`
	Revision     int       `json:"revision"`
	Title        string    `json:"title"`
	KBs          []string  `json:"kbs"`           // KBArticleIDs, digits only
	MSRCSeverity string    `json:"msrc_severity"` // Critical, Important, Moderate, Low or ""
	Categories   []string  `json:"categories"`    // Categories[i].Name
	Reboot       int       `json:"reboot"`        // InstallationBehavior.RebootBehavior
	MaxDownload  int64     `json:"max_download"`  // MaxDownloadSize
	Released     time.Time `json:"released"`      // LastDeploymentChangeTime
}

// WUAHistoryEntry is an IUpdateHistoryEntry.
type WUAHistoryEntry struct {
	UpdateID   string    `json:"update_id"`
	Revision   int       `json:"revision"`
	Title      string    `json:"title"`
	Date       time.Time `json:"date"`
	Operation  int       `json:"operation"`   // 1 installation, 2 uninstallation
	ResultCode int       `json:"result_code"` // OperationResultCode: 2 succeeded, 3 succeeded with errors
}

// QuickFix is a Win32_QuickFixEngineering row.
type QuickFix struct {
	HotFixID    string `json:"hotfix_id"` // KB5034441
	Description string `json:"description"`
	InstalledOn string `json:"installed_on"` // M/D/YYYY, as WMI gives it
}

// WUA enumerations the provider reads.
const (
	wuaOperationInstallation = 1
	wuaResultSucceeded       = 2
	wuaResultSucceededErrors = 3
)

// RebootBehaviors are InstallationBehavior.RebootBehavior's names.
var RebootBehaviors = map[int]string{0: "never_reboots", 1: "always_requires_reboot", 2: "can_request_reboot"}

// Windows reads patch state from the Windows Update Agent.
type Windows struct{ WUA WUA }

// Name is "wua".
func (w *Windows) Name() string { return proto.PatchProviderWUA }

// Scan reads pending updates, the update history and QFE, de-duplicated
// KB first (an installed row outranks a pending one).
func (w *Windows) Scan(ctx context.Context) (Scan, error) {
	ups, err := w.WUA.Search(ctx, PendingCriteria)
	if err != nil {
		return Scan{}, fmt.Errorf("Windows Update Agent search: %w", err)
	}
	hist, err := w.WUA.History(ctx)
	if err != nil {
		return Scan{}, fmt.Errorf("Windows Update Agent history: %w", err)
	}
	qfe, err := w.WUA.QuickFixes(ctx)
	if err != nil {
		return Scan{}, fmt.Errorf("quick fix engineering: %w", err)
	}
	reboot, err := w.WUA.RebootRequired(ctx)
	if err != nil {
		return Scan{}, fmt.Errorf("Windows Update Agent reboot state: %w", err)
	}
	s := Scan{Status: proto.PatchStatus{Provider: proto.PatchProviderWUA, RebootRequired: reboot}}
	for _, u := range ups {
		s.Pending = append(s.Pending, WUAPendingRow(u))
	}
	s.History = append(WUAHistoryRows(hist), QFERows(qfe)...)
	s.Pending, s.History = orEmpty(s.Pending), orEmpty(s.History)
	return s, nil
}

// WUAPendingRow is the pending row of a searched update.
func WUAPendingRow(u WUAUpdate) proto.PatchEntry {
	var kbs []string
	for _, k := range u.KBs {
		if k = normalizeKB(k); k != "" && !slices.Contains(kbs, k) {
			kbs = append(kbs, k)
		}
	}
	if len(kbs) == 0 {
		kbs = kbsInTitle(u.Title)
	}
	row := proto.PatchEntry{Title: strings.TrimSpace(u.Title), UpdateID: strings.ToLower(u.UpdateID), Revision: u.Revision,
		State: proto.PatchPending, Source: proto.PatchSourceWUAPending, Severity: u.MSRCSeverity,
		Categories: u.Categories, RebootBehavior: RebootBehaviors[u.Reboot], SizeBytes: u.MaxDownload, KBs: kbs}
	if len(kbs) > 0 {
		row.KB = kbs[0]
	}
	for _, c := range u.Categories {
		if strings.EqualFold(c, "Security Updates") || strings.EqualFold(c, "Critical Updates") && u.MSRCSeverity != "" {
			row.Security = true
		}
	}
	if u.MSRCSeverity != "" {
		row.Security = true
	}
	if !u.Released.IsZero() {
		t := u.Released.UTC()
		row.ReleasedAt = &t
	}
	return row
}

// WUAHistoryRows are the installed rows of the history: successful
// installations only (a failed attempt or an uninstallation installed
// nothing); the newest entry of one update wins.
func WUAHistoryRows(hist []WUAHistoryEntry) []proto.PatchEntry {
	var rows []proto.PatchEntry
	for _, h := range hist {
		if h.Operation != wuaOperationInstallation ||
			(h.ResultCode != wuaResultSucceeded && h.ResultCode != wuaResultSucceededErrors) {
			continue
		}
		row := proto.PatchEntry{Title: strings.TrimSpace(h.Title), UpdateID: strings.ToLower(h.UpdateID), Revision: h.Revision,
			State: proto.PatchInstalled, Source: proto.PatchSourceWUAHistory}
		if kbs := kbsInTitle(h.Title); len(kbs) > 0 {
			row.KB, row.KBs = kbs[0], kbs
		}
		if !h.Date.IsZero() {
			t := h.Date.UTC()
			row.InstalledAt = &t
		}
		rows = append(rows, row)
	}
	return newestHistory(rows, HistoryLimit)
}

// QFERows are the installed rows of Win32_QuickFixEngineering.
func QFERows(qfe []QuickFix) []proto.PatchEntry {
	var rows []proto.PatchEntry
	for _, q := range qfe {
		kb := normalizeKB(q.HotFixID)
		if kb == "" {
			continue
		}
		row := proto.PatchEntry{KB: kb, KBs: []string{kb}, Title: strings.TrimSpace(kb + " " + q.Description),
			State: proto.PatchInstalled, Source: proto.PatchSourceQFE}
		if t, err := time.Parse("1/2/2006", strings.TrimSpace(q.InstalledOn)); err == nil {
			row.InstalledAt = &t
		}
		rows = append(rows, row)
	}
	return rows
}

var kbInTitle = regexp.MustCompile(`(?i)\bKB\s?(\d{4,8})\b`)

// kbsInTitle finds "KB5034441" in an update title ("2024-01 Cumulative
// Update ... (KB5034441)").
func kbsInTitle(title string) []string {
	var out []string
	for _, m := range kbInTitle.FindAllStringSubmatch(title, -1) {
		if kb := "KB" + m[1]; !slices.Contains(out, kb) {
			out = append(out, kb)
		}
	}
	return out
}

// normalizeKB writes "5034441", "kb5034441" and "KB 5034441" as
// "KB5034441"; anything else is not a KB ("").
func normalizeKB(s string) string {
	s = strings.ToUpper(strings.Join(strings.Fields(s), ""))
	d := strings.TrimPrefix(s, "KB")
	if d == "" || strings.Trim(d, "0123456789") != "" {
		return ""
	}
	return "KB" + d
}
