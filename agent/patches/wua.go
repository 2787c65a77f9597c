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

// ---- Installs (SPEC agent behaviour 10 on Windows) ------------------------

// WUAUpdater is the part of the Windows Update Agent that installs: the
// real one (ComWUA) drives IUpdateSession's IUpdateDownloader and
// IUpdateInstaller; tests give a recorded fake. Download and Install act
// on the update of that identity and revision a Search returned, calling
// progress with a percentage as they go.
type WUAUpdater interface {
	Search(ctx context.Context, criteria string) ([]WUAUpdate, error)
	Download(ctx context.Context, updateID string, revision int, progress func(percent int)) (WUAOperation, error)
	Install(ctx context.Context, updateID string, revision int, progress func(percent int)) (WUAOperation, error)
}

// InstalledCriteria finds the updates already installed (the
// already_installed check).
const InstalledCriteria = "IsInstalled=1"

// WUAOperation is the outcome of one download or installation of one
// update: IUpdateDownloadResult / IUpdateInstallationResult.
type WUAOperation struct {
	// ResultCode is OperationResultCode (WUAResult*).
	ResultCode int `json:"result_code"`
	// HResult is the update's error (0: none).
	HResult int32 `json:"hresult"`
	// RebootRequired is IUpdateInstallationResult.RebootRequired.
	RebootRequired bool `json:"reboot_required"`
}

// OperationResultCode values.
const (
	WUAResultNotStarted          = 0
	WUAResultInProgress          = 1
	WUAResultSucceeded           = 2
	WUAResultSucceededWithErrors = 3
	WUAResultFailed              = 4
	WUAResultAborted             = 5
)

// wuaResultNames name OperationResultCode values in messages.
var wuaResultNames = map[int]string{WUAResultNotStarted: "not started", WUAResultInProgress: "in progress",
	WUAResultSucceeded: "succeeded", WUAResultSucceededWithErrors: "succeeded with errors", WUAResultFailed: "failed",
	WUAResultAborted: "aborted"}

// WUAErrors name the HRESULTs an install commonly ends with.
var WUAErrors = map[uint32]string{
	0x80240022: "WU_E_ALL_UPDATES_FAILED",
	0x80240016: "WU_E_INSTALL_NOT_ALLOWED (another installation is in progress or a reboot is pending)",
	0x8024001E: "WU_E_SERVICE_STOP",
	0x80240017: "WU_E_NOT_APPLICABLE",
	0x8024200D: "WU_E_UH_NEEDANOTHERDOWNLOAD",
	0x80246007: "WU_E_DM_NOTDOWNLOADED",
	0x80246008: "WU_E_DM_FAILTOCONNECTTOBITS",
	0x8024402C: "WU_E_PT_WINHTTP_NAME_NOT_RESOLVED",
	0x80072EE2: "ERROR_INTERNET_TIMEOUT",
	0x80070643: "ERROR_INSTALL_FAILURE",
	0x80070005: "E_ACCESSDENIED",
	0x800F081F: "CBS_E_SOURCE_MISSING",
	0x80070070: "ERROR_DISK_FULL",
}

// HResultText writes an HRESULT as Windows Update's logs do
// ("0x80240022 WU_E_ALL_UPDATES_FAILED").
func HResultText(hr int32) string {
	s := fmt.Sprintf("0x%08X", uint32(hr))
	if name, ok := WUAErrors[uint32(hr)]; ok {
		s += " " + name
	}
	return s
}

// MatchUpdate finds the update a request names among updates: by update
// identity and revision first, then by KB, then by title (case-
// insensitive); -1 when none matches. A request without a revision
// matches the identity alone.
func MatchUpdate(updates []WUAUpdate, req proto.PatchInstallRequest) int {
	i, _ := bestMatch(updates, req)
	return i
}

// Match levels, best first.
const (
	matchIdentity = iota
	matchKB
	matchTitle
	matchNone
)

// bestMatch is MatchUpdate with the level it matched at (matchNone: -1).
func bestMatch(updates []WUAUpdate, req proto.PatchInstallRequest) (int, int) {
	if id := strings.TrimSpace(req.UpdateID); id != "" {
		for i, u := range updates {
			if strings.EqualFold(u.UpdateID, id) && (req.Revision == 0 || u.Revision == req.Revision) {
				return i, matchIdentity
			}
		}
	}
	if kb := normalizeKB(req.KB); kb != "" {
		for i, u := range updates {
			if slices.Contains(WUAPendingRow(u).KBs, kb) {
				return i, matchKB
			}
		}
	}
	if title := strings.TrimSpace(req.Title); title != "" {
		for i, u := range updates {
			if strings.EqualFold(strings.TrimSpace(u.Title), title) {
				return i, matchTitle
			}
		}
	}
	return -1, matchNone
}

// WUAInstaller installs one update through the Windows Update Agent
// (behaviour 10): the pending update the request names is downloaded and
// installed; one already installed answers already_installed.
type WUAInstaller struct{ WUA WUAUpdater }

// Install installs the update req names.
func (w *WUAInstaller) Install(ctx context.Context, req proto.PatchInstallRequest, progress func(Progress)) (proto.PatchInstallResult, error) {
	if req.UpdateID == "" && req.KB == "" && req.Title == "" {
		return proto.PatchInstallResult{}, ErrNoUpdate
	}
	name := cmpOr(req.KB, cmpOr(req.Title, req.UpdateID))
	progress(Progress{Phase: proto.PatchPhaseStarting, Message: "searching Windows Update for " + name})
	pending, err := w.WUA.Search(ctx, PendingCriteria)
	if err != nil {
		return proto.PatchInstallResult{}, fmt.Errorf("Windows Update Agent search: %w", err)
	}
	// The identity (and revision) decides first, then the KB, then the
	// title, across pending and installed updates: an installed update
	// matching at a level as good as the best pending one means the
	// request is already installed.
	i, level := bestMatch(pending, req)
	if level != matchIdentity {
		installed, err := w.WUA.Search(ctx, InstalledCriteria)
		if err != nil {
			return proto.PatchInstallResult{}, fmt.Errorf("Windows Update Agent search: %w", err)
		}
		if j, got := bestMatch(installed, req); j >= 0 && got <= level {
			return proto.PatchInstallResult{Status: proto.PatchInstallAlready, AlreadyInstalled: true,
				Message: strings.TrimSpace(installed[j].Title) + " is installed"}, nil
		}
	}
	if i < 0 {
		return proto.PatchInstallResult{Status: proto.PatchInstallFailed,
			Message: "Windows Update offers no update matching " + name + " (superseded, hidden or not applicable)"}, nil
	}
	u := pending[i]
	title := strings.TrimSpace(u.Title)
	progress(Progress{Phase: proto.PatchPhaseDownloading, Message: title})
	dl, err := w.WUA.Download(ctx, u.UpdateID, u.Revision, func(pct int) {
		progress(Progress{Phase: proto.PatchPhaseDownloading, Percent: max(0, min(100, pct)), Message: title})
	})
	if err != nil {
		return proto.PatchInstallResult{}, fmt.Errorf("Windows Update download: %w", err)
	}
	if dl.ResultCode != WUAResultSucceeded && dl.ResultCode != WUAResultSucceededWithErrors {
		return wuaFailure("download", title, dl), nil
	}
	progress(Progress{Phase: proto.PatchPhaseInstalling, Message: title})
	in, err := w.WUA.Install(ctx, u.UpdateID, u.Revision, func(pct int) {
		progress(Progress{Phase: proto.PatchPhaseInstalling, Percent: max(0, min(100, pct)), Message: title})
	})
	if err != nil {
		return proto.PatchInstallResult{}, fmt.Errorf("Windows Update install: %w", err)
	}
	switch in.ResultCode {
	case WUAResultSucceeded, WUAResultSucceededWithErrors:
	default:
		return wuaFailure("installation", title, in), nil
	}
	msg := title + " installed"
	if in.ResultCode == WUAResultSucceededWithErrors {
		msg += " (succeeded with errors: " + HResultText(in.HResult) + ")"
	}
	if in.RebootRequired {
		msg += "; a reboot is required"
	}
	progress(Progress{Phase: proto.PatchPhaseFinished, Percent: 100, Message: title})
	return proto.PatchInstallResult{Status: proto.PatchInstallDone, RebootRequired: in.RebootRequired, Message: msg}, nil
}

// wuaFailure is the failed answer of a download or installation.
func wuaFailure(step, title string, op WUAOperation) proto.PatchInstallResult {
	msg := fmt.Sprintf("%s of %s %s", step, title, cmpOr(wuaResultNames[op.ResultCode], fmt.Sprintf("ended with result %d", op.ResultCode)))
	if op.HResult != 0 {
		msg += ": " + HResultText(op.HResult)
	}
	return proto.PatchInstallResult{Status: proto.PatchInstallFailed, RebootRequired: op.RebootRequired, Message: msg}
}

// ErrNoUpdate: a Windows install names no update (identity, KB or title).
var ErrNoUpdate = errors.New("the request names no update: update_id, kb or title")
