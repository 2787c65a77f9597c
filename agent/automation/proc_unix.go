//go:build !windows

package automation

import (
	"os/exec"
	"syscall"
)

// setProcessGroup starts the script in its own process group, so a
// timeout kills everything it started, not only the interpreter.
func setProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

func killGroup(cmd *exec.Cmd) {
	if cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}

// command is the interpreter for lang on this platform and the script
// file's extension.
func command(lang string) ([]string, string, error) {
	switch lang {
	case "sh":
		return []string{"/bin/sh"}, ".sh", nil
	case "bash":
		if p, err := exec.LookPath("bash"); err == nil {
			return []string{p, "--noprofile", "--norc"}, ".sh", nil
		}
	case "python":
		for _, name := range []string{"python3", "python"} {
			if p, err := exec.LookPath(name); err == nil {
				return []string{p}, ".py", nil
			}
		}
	}
	return nil, "", unsupported(lang)
}
