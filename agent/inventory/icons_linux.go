package inventory

import (
	"bufio"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/cairn-rmm/cairn/agent/proto"
)

// desktopIcons finds package icons the way a desktop does: each desktop
// entry (Type=Application, not Hidden) in Apps names an icon, by path or
// by name in the hicolor theme under Themes or in Pixmaps; the package
// owning the entry (Owners) gets it. A headless host has no entries and
// no icons.
type desktopIcons struct {
	Apps    []string
	Themes  string
	Pixmaps string
	// Owners maps desktop entry paths to the packages owning them.
	Owners func(ctx context.Context, paths []string) (map[string]string, error)
}

// systemIcons reads this machine's entries and package database.
func systemIcons() desktopIcons {
	owners := dpkgOwners
	if !isDpkgSystem() {
		owners = rpmOwners
	}
	return desktopIcons{Apps: []string{"/usr/share/applications", "/usr/local/share/applications"},
		Themes: "/usr/share/icons", Pixmaps: "/usr/share/pixmaps", Owners: owners}
}

// iconSizes are the hicolor directories tried, best first: a list row
// shows icons at 24 to 48 pixels.
var iconSizes = []string{"48x48", "64x64", "scalable", "128x128", "96x96", "256x256", "32x32", "24x24"}

// find returns each owned entry's icon by the owner's software key.
func (d desktopIcons) find(ctx context.Context) (map[string]proto.SoftwareIcon, error) {
	var paths []string
	for _, dir := range d.Apps {
		m, _ := filepath.Glob(filepath.Join(dir, "*.desktop"))
		paths = append(paths, m...)
	}
	if len(paths) == 0 {
		return map[string]proto.SoftwareIcon{}, nil
	}
	slices.Sort(paths)
	owners, err := d.Owners(ctx, paths)
	if err != nil {
		return nil, err
	}
	out := map[string]proto.SoftwareIcon{}
	for _, p := range paths {
		key := strings.ToLower(strings.TrimSpace(owners[p]))
		if key == "" {
			continue
		}
		if _, done := out[key]; done {
			continue // a package's first entry with an icon names it
		}
		name, ok := desktopEntryIcon(p)
		if !ok {
			continue
		}
		if ic, ok := d.resolve(name); ok {
			out[key] = ic
		}
	}
	return out, nil
}

// desktopEntryIcon reads the Icon key of an application's [Desktop Entry].
func desktopEntryIcon(path string) (string, bool) {
	f, err := os.Open(path)
	if err != nil {
		return "", false
	}
	defer f.Close()
	var icon string
	app, hidden, inEntry := false, false, false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "[") {
			inEntry = line == "[Desktop Entry]"
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !inEntry || !ok {
			continue
		}
		switch strings.TrimSpace(k) {
		case "Icon":
			icon = strings.TrimSpace(v)
		case "Type":
			app = strings.TrimSpace(v) == "Application"
		case "Hidden":
			hidden = strings.TrimSpace(v) == "true"
		}
	}
	return icon, icon != "" && app && !hidden
}

// resolve finds an icon by absolute path or theme name.
func (d desktopIcons) resolve(name string) (proto.SoftwareIcon, bool) {
	if filepath.IsAbs(name) {
		ic, err := readIconFile(name)
		return ic, err == nil
	}
	if strings.ContainsAny(name, `/\`) {
		return proto.SoftwareIcon{}, false
	}
	base := strings.TrimSuffix(strings.TrimSuffix(name, ".png"), ".svg")
	var tries []string
	for _, size := range iconSizes {
		for _, ext := range []string{".png", ".svg"} {
			tries = append(tries, filepath.Join(d.Themes, "hicolor", size, "apps", base+ext))
		}
	}
	tries = append(tries, filepath.Join(d.Pixmaps, base+".png"), filepath.Join(d.Pixmaps, base+".svg"))
	for _, p := range tries {
		if ic, err := readIconFile(p); err == nil {
			return ic, true
		}
	}
	return proto.SoftwareIcon{}, false
}

// dpkgOwners asks dpkg which packages own paths (one dpkg-query -S).
func dpkgOwners(ctx context.Context, paths []string) (map[string]string, error) {
	// Exit 1: some path is owned by no package; the rest are listed.
	out, _, err := command(ctx, []int{0, 1}, "dpkg-query", append([]string{"-S", "--"}, paths...)...)
	if err != nil {
		return nil, err
	}
	return parseDpkgOwners(out), nil
}

// parseDpkgOwners reads `dpkg-query -S` lines: "pkg[:arch][, pkg2]: path";
// diversion lines are skipped.
func parseDpkgOwners(out string) map[string]string {
	owners := map[string]string{}
	for line := range strings.Lines(out) {
		line = strings.TrimRight(line, "\n")
		if strings.HasPrefix(line, "diversion by") {
			continue
		}
		i := strings.Index(line, ": /")
		if i <= 0 {
			continue
		}
		pkg, _, _ := strings.Cut(line[:i], ",")
		pkg, _, _ = strings.Cut(strings.TrimSpace(pkg), ":")
		owners[line[i+2:]] = pkg
	}
	return owners
}

// rpmOwners asks rpm which packages own paths: one line per path, in
// order ("file ... is not owned by any package" for a stray one).
func rpmOwners(ctx context.Context, paths []string) (map[string]string, error) {
	out, _, err := command(ctx, []int{0, 1}, "rpm", append([]string{"-qf", "--queryformat", "%{NAME}\n", "--"}, paths...)...)
	if err != nil {
		return nil, err
	}
	owners := map[string]string{}
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if len(lines) != len(paths) {
		return owners, nil
	}
	for i, l := range lines {
		if l != "" && !strings.Contains(l, " ") {
			owners[paths[i]] = l
		}
	}
	return owners, nil
}
