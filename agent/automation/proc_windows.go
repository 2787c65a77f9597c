//go:build windows

package automation

import (
	"os/exec"
	"strconv"
)

// On Windows the script's process tree is ended with taskkill /T (job
// objects would be tighter; this keeps the agent free of cgo and
// x/sys/windows for now).
func setProcessGroup(*exec.Cmd) {}

func killGroup(cmd *exec.Cmd) {
	if cmd.Process == nil {
		return
	}
	_ = exec.Command("taskkill", "/F", "/T", "/PID", strconv.Itoa(cmd.Process.Pid)).Run()
	_ = cmd.Process.Kill()
}

func command(lang string) ([]string, string, error) {
	switch lang {
	case "powershell":
		return []string{"powershell.exe", "-NoProfile", "-NonInteractive", "-ExecutionPolicy", "Bypass", "-File"}, ".ps1", nil
	case "cmd":
		return []string{"cmd.exe", "/D", "/C"}, ".cmd", nil
	}
	return nil, "", unsupported(lang)
}
