package software

import (
	"context"
	_ "embed"
	"strings"

	"github.com/cairn-rmm/cairn/agent/proto"
)

// UninstallTimeoutSeconds bounds an uninstall on the endpoint.
const UninstallTimeoutSeconds = 900

// The scripts an uninstall runs when no override gives the command. They
// read what to remove from their parameters (CAIRN_PARAM_NAME and
// CAIRN_PARAM_VERSION, set by the agent as environment variables), never
// from text spliced into the body, so a package name cannot inject a
// command.
var (
	//go:embed uninstall_linux.sh
	uninstallLinux string
	//go:embed uninstall_windows.ps1
	uninstallWindows string
)

// UninstallJob is the quick job that uninstalls one software row: what
// the job run signs and sends as quick_job_run.
type UninstallJob struct {
	Device Device
	// Name and Version are the row as the device reports it (Version ""
	// when the caller named none: every version of the name).
	Name    string
	Version string
	// Command is the override's command line when a rule gives one
	// ("": the endpoint's own uninstaller, found by the script).
	Command        string
	Language       string
	Body           string
	Parameters     map[string]any
	TimeoutSeconds int
}

// Summary is what the device's activity says of it.
func (j UninstallJob) Summary() string {
	s := "Uninstall " + j.Name
	if j.Version != "" {
		s += " " + j.Version
	}
	return s
}

// PlanUninstall checks an uninstall of a software row of a device in the
// actor's scope (404 when the device or the row is not there, 409
// uninstall_blocked when a block stops it) and returns the job that does
// it: the override's command when a rule gives one, else the platform's
// script (apt-get, dnf, yum or rpm on Linux; the product's quiet
// uninstall string or msiexec /x by product code on Windows).
func (s *Service) PlanUninstall(ctx context.Context, a Actor, t Target) (UninstallJob, error) {
	res, err := s.resolve(ctx, a, t)
	if err != nil {
		return UninstallJob{}, err
	}
	version := ""
	if t.Version != nil {
		version = strings.TrimSpace(*t.Version)
	}
	plan, err := s.CheckUninstall(ctx, res.name, version)
	if err != nil {
		return UninstallJob{}, err
	}
	job := UninstallJob{Device: res.device, Name: res.name, Version: version, Command: plan.Command,
		Parameters: map[string]any{"name": res.name, "version": version}, TimeoutSeconds: UninstallTimeoutSeconds}
	windows := strings.Contains(strings.ToLower(res.os), "windows")
	switch {
	case plan.Command != "" && windows:
		job.Language, job.Body = proto.LangCmd, "@echo off\r\n"+plan.Command+"\r\n"
	case plan.Command != "":
		job.Language, job.Body = proto.LangSh, plan.Command+"\n"
	case windows:
		job.Language, job.Body = proto.LangPowerShell, uninstallWindows
	default:
		job.Language, job.Body = proto.LangSh, uninstallLinux
	}
	return job, nil
}
