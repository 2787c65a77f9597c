package files

import (
	"strings"

	"github.com/cairn-rmm/cairn/agent/proto"
)

// The path rules are pure functions of the path and the operating system
// ("linux" or "windows") so both platforms' rules are tested on Linux.

// CleanPath checks an absolute path the Engine sent and answers it in the
// platform's canonical form: on Linux "/a/b" (no trailing slash, no
// repeated or "." components); on Windows "C:\a\b" or "\\server\share\a"
// with backslashes. Relative paths answer path_not_absolute; "..", NUL
// bytes, the \\?\ and \\.\ namespaces and reserved device names (CON,
// NUL, COM1...) answer path_invalid.
func CleanPath(goos, p string) (string, error) {
	if p == "" {
		return "", refuse(proto.CodeFilePathNotAbsolute, "a path is required")
	}
	if strings.ContainsRune(p, 0) {
		return "", refuse(proto.CodeFilePathInvalid, "the path contains a NUL byte")
	}
	if goos == "windows" {
		return cleanWindows(p)
	}
	if !strings.HasPrefix(p, "/") {
		return "", refuse(proto.CodeFilePathNotAbsolute, "%q is not an absolute path", p)
	}
	parts, err := components(strings.Split(p, "/"))
	if err != nil {
		return "", err
	}
	return "/" + strings.Join(parts, "/"), nil
}

func cleanWindows(p string) (string, error) {
	s := strings.ReplaceAll(p, "/", `\`)
	if strings.HasPrefix(s, `\\?\`) || strings.HasPrefix(s, `\\.\`) || strings.HasPrefix(s, `\??\`) {
		return "", refuse(proto.CodeFilePathInvalid, "%q: the \\\\?\\ and \\\\.\\ namespaces are refused", p)
	}
	var prefix string
	var rest []string
	switch {
	case strings.HasPrefix(s, `\\`):
		parts := strings.Split(s[2:], `\`)
		if len(parts) < 2 || parts[0] == "" || parts[1] == "" {
			return "", refuse(proto.CodeFilePathNotAbsolute, "%q: a UNC path names \\\\server\\share", p)
		}
		if parts[0] == "." || parts[0] == "?" || parts[0] == ".." || parts[1] == ".." || parts[1] == "." {
			return "", refuse(proto.CodeFilePathInvalid, "%q: invalid server or share", p)
		}
		prefix, rest = `\\`+parts[0]+`\`+parts[1], parts[2:]
	case len(s) >= 3 && isLetter(s[0]) && s[1] == ':' && s[2] == '\\':
		prefix, rest = strings.ToUpper(s[:1])+":", strings.Split(s[3:], `\`)
	default:
		return "", refuse(proto.CodeFilePathNotAbsolute, "%q is not an absolute path (C:\\... or \\\\server\\share\\...)", p)
	}
	parts, err := components(rest)
	if err != nil {
		return "", err
	}
	for _, c := range parts {
		if strings.ContainsAny(c, `<>:"|?*`) {
			return "", refuse(proto.CodeFilePathInvalid, "%q: %q holds a character Windows refuses", p, c)
		}
		if reservedWindowsName(c) {
			return "", refuse(proto.CodeFilePathInvalid, "%q: %q is a device name", p, c)
		}
	}
	if len(parts) == 0 && !strings.HasPrefix(prefix, `\\`) {
		return prefix + `\`, nil
	}
	if len(parts) == 0 {
		return prefix, nil
	}
	return prefix + `\` + strings.Join(parts, `\`), nil
}

// components drops empty and "." components and refuses "..".
func components(in []string) ([]string, error) {
	out := make([]string, 0, len(in))
	for _, c := range in {
		switch c {
		case "", ".":
		case "..":
			return nil, refuse(proto.CodeFilePathInvalid, "paths may not contain \"..\"")
		default:
			out = append(out, c)
		}
	}
	return out, nil
}

func isLetter(b byte) bool { return (b >= 'a' && b <= 'z') || (b >= 'A' && b <= 'Z') }

// reservedWindowsName reports the names Windows maps to devices in every
// directory, with or without an extension ("NUL.txt" is NUL).
func reservedWindowsName(c string) bool {
	base := strings.ToUpper(strings.TrimRight(c, " ."))
	if i := strings.IndexByte(base, '.'); i >= 0 {
		base = base[:i]
	}
	switch base {
	case "CON", "PRN", "AUX", "NUL", "CONIN$", "CONOUT$":
		return true
	}
	if len(base) == 4 && (strings.HasPrefix(base, "COM") || strings.HasPrefix(base, "LPT")) && base[3] >= '1' && base[3] <= '9' {
		return true
	}
	return false
}

// CheckName checks a new name for rename or an uploaded entry: one
// component, no separators.
func CheckName(goos, name string) error {
	if name == "" || name == "." || name == ".." || strings.ContainsRune(name, 0) || strings.ContainsRune(name, '/') ||
		(goos == "windows" && (strings.ContainsAny(name, `\<>:"|?*`) || reservedWindowsName(name))) {
		return refuse(proto.CodeFilePathInvalid, "%q is not a valid name", name)
	}
	return nil
}

// JoinPath joins a clean directory path and a name.
func JoinPath(goos, dir, name string) string {
	sep := "/"
	if goos == "windows" {
		sep = `\`
	}
	if strings.HasSuffix(dir, sep) {
		return dir + name
	}
	return dir + sep + name
}

// Parent answers the directory holding a clean path and its last
// component; ok is false for a root.
func Parent(goos, p string) (dir, name string, ok bool) {
	sep := "/"
	if goos == "windows" {
		sep = `\`
	}
	if IsRoot(goos, p) {
		return "", "", false
	}
	i := strings.LastIndex(p, sep)
	dir, name = p[:i], p[i+1:]
	if goos != "windows" && dir == "" {
		dir = "/"
	}
	if goos == "windows" && len(dir) == 2 && dir[1] == ':' {
		dir += `\`
	}
	return dir, name, true
}

// IsRoot reports whether a clean path is a file system root: "/", a
// drive "C:\" or a share "\\server\share".
func IsRoot(goos, p string) bool {
	if goos != "windows" {
		return p == "/"
	}
	if len(p) == 3 && p[1] == ':' {
		return true
	}
	return strings.HasPrefix(p, `\\`) && strings.Count(p[2:], `\`) == 1
}

// Within reports whether clean path p is base or below it (a directory
// moved or copied into itself), without case on Windows.
func Within(goos, base, p string) bool {
	sep := "/"
	if goos == "windows" {
		sep = `\`
		base, p = strings.ToLower(base), strings.ToLower(p)
	}
	return p == base || strings.HasPrefix(p, strings.TrimSuffix(base, sep)+sep)
}

// SameName compares two names as the platform's file systems do.
func SameName(goos, a, b string) bool {
	if goos == "windows" {
		return strings.EqualFold(a, b)
	}
	return a == b
}
