package service

// Running under the Windows service control manager: the installed
// service's command line is "cairn-agent.exe run --service --config ...".

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/windows/svc"

	"github.com/cairn-rmm/cairn/agent"
)

// RunUnderSCM connects to the SCM and runs the agent (run, given the log
// writer) until the SCM stops it. The agent logs to <config dir>\logs\agent-<date>.log (a
// service has no console); files older than agent.log_retention_days are
// removed at each start.
func RunUnderSCM(ctx context.Context, configPath string, run func(context.Context, io.Writer) error) error {
	logw, err := openServiceLog(configPath, time.Now())
	if err != nil {
		return err
	}
	defer logw.Close()
	h := &scmHandler{ctx: ctx, logw: logw, run: run}
	if err := svc.Run(ServiceName, h); err != nil {
		return fmt.Errorf("%s is for the service control manager, which did not start this process: %w", ServiceFlag, err)
	}
	return h.err
}

type scmHandler struct {
	ctx  context.Context
	logw io.Writer
	run  func(context.Context, io.Writer) error
	err  error
}

// Execute reports running at once (the agent's health is the Engine's to
// judge, as with systemd's Type=simple), stops the run on Stop or
// Shutdown, and reports a failure exit code when the run ends by itself
// with an error, so the SCM's restart action starts it again.
func (h *scmHandler) Execute(_ []string, req <-chan svc.ChangeRequest, st chan<- svc.Status) (bool, uint32) {
	st <- svc.Status{State: svc.StartPending}
	ctx, cancel := context.WithCancel(h.ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- h.run(ctx, h.logw) }()
	st <- svc.Status{State: svc.Running, Accepts: svc.AcceptStop | svc.AcceptShutdown}
	for {
		select {
		case c := <-req:
			switch c.Cmd {
			case svc.Interrogate:
				st <- c.CurrentStatus
			case svc.Stop, svc.Shutdown:
				st <- svc.Status{State: svc.StopPending, WaitHint: 30000}
				cancel()
				h.err = <-done
				return false, 0
			}
		case err := <-done:
			h.err = err
			if err != nil {
				fmt.Fprintf(h.logw, "cairn-agent: %v\n", err)
				return true, 1
			}
			return false, 0
		}
	}
}

// openServiceLog opens today's log file for appending and removes old ones.
func openServiceLog(configPath string, now time.Time) (*os.File, error) {
	dir := LogDir(configPath)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("log directory: %w", err)
	}
	retention := 14
	if c, err := agent.Load(configPath); err == nil {
		retention = c.Agent.LogRetentionDays
	}
	pruneLogs(dir, retention, now)
	f, err := os.OpenFile(filepath.Join(dir, "agent-"+now.Format("2006-01-02")+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("log file: %w", err)
	}
	return f, nil
}

// pruneLogs removes agent-*.log files modified more than days days before
// now; 0 keeps everything.
func pruneLogs(dir string, days int, now time.Time) {
	if days <= 0 {
		return
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), "agent-") || !strings.HasSuffix(e.Name(), ".log") {
			continue
		}
		if info, err := e.Info(); err == nil && now.Sub(info.ModTime()) > time.Duration(days)*24*time.Hour {
			_ = os.Remove(filepath.Join(dir, e.Name()))
		}
	}
}
