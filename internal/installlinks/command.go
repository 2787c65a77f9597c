package installlinks

import "strings"

// Command is the one-line installer for a platform: download the binary
// through the signed link to a fresh temporary file, make it executable
// and run `cairn-agent install --server ... --code ...`, which enrolls
// (waiting for approval) and installs the service (it copies itself to
// /usr/local/bin, so the temporary file is removed afterwards). The console builds the
// same lines (web/src/pages/enroll/InstallCommands.tsx), adding the CA pin
// when chosen.
func Command(platform, linkURL, serverURL, code string) string {
	if strings.HasPrefix(platform, "windows-") {
		return "$f = Join-Path $env:TEMP ('cairn-agent-' + [guid]::NewGuid() + '.exe'); " +
			"Invoke-WebRequest -UseBasicParsing -Uri " + psQuote(linkURL) + " -OutFile $f; " +
			"& $f install --server " + psQuote(serverURL) + " --code " + psQuote(code)
	}
	return `f=$(mktemp) && curl -fsSL -o "$f" ` + shQuote(linkURL) + ` && chmod 0755 "$f" && sudo "$f" install --server ` +
		shQuote(serverURL) + " --code " + shQuote(code) + ` && rm -f "$f"`
}

// shQuote quotes for POSIX sh when the value needs it.
func shQuote(v string) string {
	if v != "" && strings.Trim(v, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789@%+=:,./_-") == "" {
		return v
	}
	return "'" + strings.ReplaceAll(v, "'", `'\''`) + "'"
}

// psQuote is a PowerShell single-quoted string.
func psQuote(v string) string { return "'" + strings.ReplaceAll(v, "'", "''") + "'" }
