package service

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/windows"
	"golang.org/x/sys/windows/svc"
	"golang.org/x/sys/windows/svc/mgr"
)

// The Windows service.
const (
	ServiceName        = "CairnAgent"
	ServiceDisplayName = "Cairn Agent"
	serviceDescription = "Cairn endpoint agent: inventory, remote operations and remote access for the Cairn server."
)

// scmWait bounds waiting for the service to start or stop.
const scmWait = 60 * time.Second

// DefaultWindowsBinary is where install copies the running binary:
// %ProgramFiles%\Cairn\cairn-agent.exe.
func DefaultWindowsBinary() string {
	return filepath.Join(knownFolder(windows.FOLDERID_ProgramFiles, "ProgramFiles", `C:\Program Files`), "Cairn", "cairn-agent.exe")
}

// InstallResult says what Install did.
type InstallResult struct {
	Binary  string // the binary the service runs
	Copied  bool   // the running binary was copied to Binary
	Service string // the service name
	// Command is the service's command line (BinaryPathName).
	Command string
	// Created is false when an existing service was reconfigured.
	Created bool
	Started bool
}

// UninstallResult says what Uninstall did.
type UninstallResult struct {
	Service string
	// Removed is false when there was no service to remove.
	Removed bool
	Stopped bool
	Purged  []string
}

func serviceName(o string) string { return orDefault(o, ServiceName) }

// Install registers the agent as an automatically started service
// running as LocalSystem ("cairn-agent.exe run --service --config ..."),
// restarted by the SCM 5 seconds after any failure, locks the config
// directory down to SYSTEM and Administrators, and (unless NoStart)
// starts it and waits until it runs. A reinstall stops the running
// service first (Windows cannot replace a running executable), updates
// its configuration and starts it again.
func Install(ctx context.Context, o InstallOptions) (InstallResult, error) {
	w := out(o.Out)
	res := InstallResult{Service: serviceName(o.serviceName)}
	cfgPath, err := loadInstallConfig(o.ConfigPath)
	if err != nil {
		return res, err
	}
	m, err := mgr.Connect()
	if err != nil {
		return res, fmt.Errorf("connect to the service control manager: %w", hint(err))
	}
	defer m.Disconnect()
	existing, err := m.OpenService(res.Service)
	switch {
	case err == nil:
		defer existing.Close()
		// Stop first: the binary may be the one being replaced.
		if err := stop(ctx, existing); err != nil {
			return res, err
		}
	case !errors.Is(err, windows.ERROR_SERVICE_DOES_NOT_EXIST):
		return res, fmt.Errorf("open service %s: %w", res.Service, hint(err))
	}

	if o.Binary != "" {
		res.Binary, err = existingBinary(o.Binary)
	} else {
		res.Binary, res.Copied, err = copyRunningBinary(orDefault(o.BinaryDest, DefaultWindowsBinary()))
	}
	if err != nil {
		return res, err
	}
	if res.Copied {
		fmt.Fprintf(w, "installed binary %s\n", res.Binary)
	} else {
		fmt.Fprintf(w, "using binary %s\n", res.Binary)
	}

	if err := SecureConfigDir(filepath.Dir(cfgPath)); err != nil {
		return res, err
	}
	fmt.Fprintf(w, "limited %s to SYSTEM and Administrators\n", filepath.Dir(cfgPath))

	args := []string{"run", ServiceFlag, "--config", cfgPath}
	if o.Hostname != "" {
		if !safeHostname(o.Hostname) {
			return res, fmt.Errorf("hostname %q: only letters, digits, '.', '-' and '_' are accepted", o.Hostname)
		}
		args = append(args, "--hostname", o.Hostname)
	}
	res.Command = commandLine(res.Binary, args)
	cfg := mgr.Config{
		ServiceType:  windows.SERVICE_WIN32_OWN_PROCESS,
		StartType:    mgr.StartAutomatic,
		ErrorControl: mgr.ErrorNormal,
		DisplayName:  ServiceDisplayName,
		Description:  serviceDescription,
	}
	s := existing
	if s == nil {
		s, err = m.CreateService(res.Service, res.Binary, cfg, args...)
		if err != nil {
			return res, fmt.Errorf("create service %s: %w", res.Service, hint(err))
		}
		defer s.Close()
		res.Created = true
		fmt.Fprintf(w, "created service %s: %s\n", res.Service, res.Command)
	} else {
		if err := reconfigure(s, res.Command); err != nil {
			return res, fmt.Errorf("update service %s: %w", res.Service, hint(err))
		}
		fmt.Fprintf(w, "updated service %s: %s\n", res.Service, res.Command)
	}
	// Never give up restarting: the agent is how the host is reached. A
	// failure here leaves a working service that is not restarted after a
	// crash, so it is reported, not fatal.
	restart := mgr.RecoveryAction{Type: mgr.ServiceRestart, Delay: 5 * time.Second}
	if err := s.SetRecoveryActions([]mgr.RecoveryAction{restart, restart, restart}, 24*60*60); err != nil {
		fmt.Fprintf(w, "warning: could not set the restart-on-failure actions: %v\n", err)
	} else if err := s.SetRecoveryActionsOnNonCrashFailures(true); err != nil {
		fmt.Fprintf(w, "warning: could not apply the restart actions to non-crash failures: %v\n", err)
	}
	if o.NoStart {
		fmt.Fprintf(w, "not started (--no-start); to start it: sc.exe start %s\n", res.Service)
		return res, nil
	}
	if err := start(ctx, s); err != nil {
		return res, err
	}
	res.Started = true
	fmt.Fprintf(w, "started %s; check it with: sc.exe query %s\n", res.Service, res.Service)
	return res, nil
}

// Uninstall stops and deletes the service. agent.json stays unless
// Purge, which also removes it (with its lock, temp files and logs) and
// the copied binary at BinaryDest (never a --binary elsewhere); a binary that is running (uninstall
// run from it) is removed at the next reboot instead.
func Uninstall(ctx context.Context, o UninstallOptions) (UninstallResult, error) {
	w := out(o.Out)
	res := UninstallResult{Service: serviceName(o.serviceName)}
	m, err := mgr.Connect()
	if err != nil {
		return res, fmt.Errorf("connect to the service control manager: %w", hint(err))
	}
	defer m.Disconnect()
	s, err := m.OpenService(res.Service)
	switch {
	case errors.Is(err, windows.ERROR_SERVICE_DOES_NOT_EXIST):
		fmt.Fprintf(w, "no service %s; nothing to stop or remove\n", res.Service)
	case err != nil:
		return res, fmt.Errorf("open service %s: %w", res.Service, hint(err))
	default:
		defer s.Close()
		st, err := s.Query()
		if err != nil {
			return res, fmt.Errorf("query service %s: %w", res.Service, err)
		}
		if st.State != svc.Stopped {
			if err := stop(ctx, s); err != nil {
				return res, err
			}
			res.Stopped = true
			fmt.Fprintf(w, "stopped %s\n", res.Service)
		}
		if err := s.Delete(); err != nil {
			return res, fmt.Errorf("delete service %s: %w", res.Service, hint(err))
		}
		res.Removed = true
		fmt.Fprintf(w, "removed service %s\n", res.Service)
	}
	if !o.Purge {
		if o.ConfigPath != "" {
			fmt.Fprintf(w, "kept %s (use --purge to remove it)\n", o.ConfigPath)
		}
		return res, nil
	}
	var errs []error
	if o.ConfigPath != "" {
		// The agent's own log files only; the directory goes when that
		// empties it.
		logs, _ := filepath.Glob(filepath.Join(LogDir(o.ConfigPath), "agent-*.log"))
		for _, p := range logs {
			if err := os.Remove(p); err != nil {
				errs = append(errs, err)
			} else {
				res.Purged = append(res.Purged, p)
			}
		}
		if err := os.Remove(LogDir(o.ConfigPath)); err == nil {
			res.Purged = append(res.Purged, LogDir(o.ConfigPath))
		}
	}
	binary := orDefault(o.BinaryDest, DefaultWindowsBinary())
	purged, err := purge(o.ConfigPath, "")
	res.Purged = append(res.Purged, purged...)
	errs = append(errs, err)
	switch removed, err := removeBinary(binary); {
	case err != nil:
		errs = append(errs, err)
	case removed:
		res.Purged = append(res.Purged, binary)
		_ = os.Remove(filepath.Dir(binary)) // only when empty
	}
	for _, p := range res.Purged {
		fmt.Fprintf(w, "removed %s\n", p)
	}
	return res, errors.Join(errs...)
}

// reconfigure points an existing service at the new command line with
// the settings a fresh install gets. It changes only what install sets:
// mgr's UpdateConfig also rewrites the SID type and delayed start, which
// an administrator may have chosen (and which Wine cannot set).
func reconfigure(s *mgr.Service, command string) error {
	p := windows.StringToUTF16Ptr
	err := windows.ChangeServiceConfig(s.Handle, windows.SERVICE_WIN32_OWN_PROCESS, mgr.StartAutomatic, mgr.ErrorNormal,
		p(command), nil, nil, nil, nil, nil, p(ServiceDisplayName))
	if err != nil {
		return err
	}
	d := windows.SERVICE_DESCRIPTION{Description: p(serviceDescription)}
	return windows.ChangeServiceConfig2(s.Handle, windows.SERVICE_CONFIG_DESCRIPTION, (*byte)(unsafe.Pointer(&d)))
}

// removeBinary deletes the installed binary; the running executable
// cannot be deleted on Windows, so it is scheduled for deletion at the
// next reboot.
func removeBinary(p string) (bool, error) {
	err := os.Remove(p)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, os.ErrNotExist):
		return false, nil
	}
	if self, serr := os.Executable(); serr == nil && sameFile(self, p) {
		if merr := windows.MoveFileEx(windows.StringToUTF16Ptr(p), nil, windows.MOVEFILE_DELAY_UNTIL_REBOOT); merr == nil {
			return false, nil
		}
	}
	return false, hint(err)
}

// commandLine quotes the service's command line as CreateService does.
func commandLine(exe string, args []string) string {
	parts := []string{syscall.EscapeArg(exe)}
	for _, a := range args {
		parts = append(parts, syscall.EscapeArg(a))
	}
	return strings.Join(parts, " ")
}

// start starts the service and waits until it runs; a service that stops
// again instead is a failure naming its exit code.
func start(ctx context.Context, s *mgr.Service) error {
	if err := s.Start(); err != nil && !errors.Is(err, windows.ERROR_SERVICE_ALREADY_RUNNING) {
		return fmt.Errorf("start service %s: %w", s.Name, hint(err))
	}
	st, err := waitState(ctx, s, svc.Running)
	if err != nil {
		return err
	}
	if st.State != svc.Running {
		return fmt.Errorf("service %s stopped while starting (exit code %d, service exit code %d); see %s and the System event log",
			s.Name, st.Win32ExitCode, st.ServiceSpecificExitCode, "the agent's log directory")
	}
	return nil
}

// stop stops the service (nothing to do when it is stopped) and waits.
func stop(ctx context.Context, s *mgr.Service) error {
	if _, err := s.Control(svc.Stop); err != nil && !errors.Is(err, windows.ERROR_SERVICE_NOT_ACTIVE) {
		return fmt.Errorf("stop service %s: %w", s.Name, hint(err))
	}
	st, err := waitState(ctx, s, svc.Stopped)
	if err != nil {
		return err
	}
	if st.State != svc.Stopped {
		return fmt.Errorf("service %s did not stop (state %d)", s.Name, st.State)
	}
	return nil
}

// waitState polls until the service is in want or settled elsewhere
// (stopped while starting), for at most scmWait.
func waitState(ctx context.Context, s *mgr.Service, want svc.State) (svc.Status, error) {
	ctx, cancel := context.WithTimeout(ctx, scmWait)
	defer cancel()
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		st, err := s.Query()
		if err != nil {
			return st, fmt.Errorf("query service %s: %w", s.Name, err)
		}
		if st.State == want || (want == svc.Running && st.State == svc.Stopped) {
			return st, nil
		}
		select {
		case <-ctx.Done():
			return st, fmt.Errorf("service %s: still in state %d after %s: %w", s.Name, st.State, scmWait, ctx.Err())
		case <-t.C:
		}
	}
}
