package inventory

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"golang.org/x/sys/windows/registry"

	"github.com/cairn-rmm/cairn/agent/proto"
)

const uninstallPath = `SOFTWARE\Microsoft\Windows\CurrentVersion\Uninstall`

// collectSoftware reads what Programs and Features shows: the Uninstall
// keys of HKLM in the 64-bit and the 32-bit (WOW6432Node) views, and of
// every loaded user hive under HKU (per-user installs; a user who is not
// logged on has no loaded hive and is not seen). On 32-bit Windows both
// HKLM views are the same key, which windowsSoftware deduplicates.
func collectSoftware(ctx context.Context, c *Collector, inv *proto.Inventory) error {
	var entries []uninstallEntry
	for _, v := range []struct {
		flag uint32
		arch string
	}{{registry.WOW64_64KEY, "x86_64"}, {registry.WOW64_32KEY, "x86"}} {
		es, err := uninstallEntries(ctx, registry.LOCAL_MACHINE, uninstallPath, v.flag, v.arch)
		if err != nil && !errors.Is(err, registry.ErrNotExist) {
			return fmt.Errorf(`HKLM\%s (%s view): %w`, uninstallPath, v.arch, err)
		}
		entries = append(entries, es...)
	}
	if users, err := registry.USERS.ReadSubKeyNames(-1); err == nil {
		for _, sid := range users {
			if strings.HasSuffix(sid, "_Classes") {
				continue
			}
			for _, v := range []struct{ path, arch string }{
				{sid + `\` + uninstallPath, ""},
				{sid + `\SOFTWARE\WOW6432Node\Microsoft\Windows\CurrentVersion\Uninstall`, "x86"},
			} {
				// A hive this account cannot read is skipped: per-user
				// software is best effort.
				es, _ := uninstallEntries(ctx, registry.USERS, v.path, 0, v.arch)
				entries = append(entries, es...)
			}
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	rows := windowsSoftware(entries)
	inv.SoftwareIcons = c.softwareIcons(ctx, rows, func(context.Context) (map[string]proto.SoftwareIcon, error) {
		return displayIcons(entries, loadDisplayIcon), nil
	}, loadDisplayIcon)
	inv.Software = rows
	return nil
}

// uninstallEntries reads every subkey of root\path in the given view.
func uninstallEntries(ctx context.Context, root registry.Key, path string, view uint32, arch string) ([]uninstallEntry, error) {
	k, err := registry.OpenKey(root, path, registry.ENUMERATE_SUB_KEYS|registry.QUERY_VALUE|view)
	if err != nil {
		return nil, err
	}
	defer k.Close()
	names, err := k.ReadSubKeyNames(-1)
	if err != nil {
		return nil, err
	}
	out := make([]uninstallEntry, 0, len(names))
	for _, n := range names {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		sk, err := registry.OpenKey(k, n, registry.QUERY_VALUE|view)
		if err != nil {
			continue
		}
		str := func(name string) string { s, _, _ := sk.GetStringValue(name); return s }
		num := func(name string) uint64 { v, _, _ := sk.GetIntegerValue(name); return v }
		out = append(out, uninstallEntry{
			DisplayName:      str("DisplayName"),
			DisplayVersion:   str("DisplayVersion"),
			Publisher:        str("Publisher"),
			InstallDate:      str("InstallDate"),
			EstimatedSizeKiB: num("EstimatedSize"),
			SystemComponent:  num("SystemComponent") == 1,
			ParentKeyName:    str("ParentKeyName"),
			ReleaseType:      str("ReleaseType"),
			WindowsInstaller: num("WindowsInstaller") == 1,
			Arch:             arch,
			DisplayIcon:      expanded(str("DisplayIcon")),
		})
		sk.Close()
	}
	return out, nil
}

// expanded expands %VAR% references (DisplayIcon is often REG_EXPAND_SZ,
// e.g. %SystemRoot%\system32\app.exe,0).
func expanded(s string) string {
	if !strings.Contains(s, "%") {
		return s
	}
	if x, err := registry.ExpandString(s); err == nil {
		return x
	}
	return s
}
