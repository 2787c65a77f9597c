package shells

import (
	"bufio"
	"io"
	"os"
	"strconv"
	"strings"
)

// fallbackShell is used when the account's shell is unknown or refuses
// logins.
const fallbackShell = "/bin/sh"

// ShellEnv names a shell program that replaces the account's login shell,
// for hosts whose login profile is unsuitable for remote sessions (it
// blocks, or prompts). It still starts as a login shell.
const ShellEnv = "CAIRN_AGENT_SHELL"

// withShellOverride applies a usable override to a.
func withShellOverride(a account, override string) account {
	if override != "" && usableShell(override) {
		a.shell = override
	}
	return a
}

// account is what a login needs from /etc/passwd.
type account struct {
	name, home, shell string
}

// lookupAccount finds uid in a passwd file. os/user is not enough: it
// has no login shell, and its cgo-free lookup reads the same file anyway.
// Missing pieces get fallbacks, so a shell always starts.
func lookupAccount(passwd io.Reader, uid int) account {
	a := account{}
	sc := bufio.NewScanner(passwd)
	want := strconv.Itoa(uid)
	for sc.Scan() {
		f := strings.Split(sc.Text(), ":")
		if len(f) == 7 && f[2] == want {
			a = account{name: f[0], home: f[5], shell: f[6]}
			break
		}
	}
	if a.name == "" {
		a.name = want
	}
	if a.home == "" {
		a.home = "/"
	}
	if !usableShell(a.shell) {
		a.shell = fallbackShell
	}
	return a
}

// usableShell refuses the no-login shells that service accounts carry
// (the agent may run as one) and anything that is not an executable file.
func usableShell(path string) bool {
	if path == "" || strings.HasSuffix(path, "/nologin") || strings.HasSuffix(path, "/false") {
		return false
	}
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}
