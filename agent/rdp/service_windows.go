package rdp

import (
	"context"
	"errors"
	"fmt"
	"time"

	"golang.org/x/sys/windows"
	"golang.org/x/sys/windows/svc"
	"golang.org/x/sys/windows/svc/mgr"

	"github.com/cairn-rmm/cairn/agent/registry"
)

// newService is the Terminal Service on the real registry, SCM and
// firewall (behaviour 14).
func newService() Service {
	return &TermService{Registry: registry.System(), SCM: winSCM{name: "TermService"}, Rules: comFirewall{}}
}

// winSCM drives one service through the Service Control Manager.
type winSCM struct{ name string }

// scmWait bounds a start or stop.
const scmWait = 60 * time.Second

func (s winSCM) open() (*mgr.Mgr, *mgr.Service, error) {
	m, err := mgr.Connect()
	if err != nil {
		return nil, nil, fmt.Errorf("connect to the service manager: %w", err)
	}
	sv, err := m.OpenService(s.name)
	if err != nil {
		_ = m.Disconnect()
		return nil, nil, err
	}
	return m, sv, nil
}

func (s winSCM) Query(context.Context) (string, string, error) {
	m, sv, err := s.open()
	if errors.Is(err, windows.ERROR_SERVICE_DOES_NOT_EXIST) {
		return "unknown", StartModeNotInstalled, nil
	}
	if err != nil {
		return "", "", err
	}
	defer m.Disconnect()
	defer sv.Close()
	st, err := sv.Query()
	if err != nil {
		return "", "", err
	}
	cfg, err := sv.Config()
	if err != nil {
		return "", "", err
	}
	return stateName(st.State), startModeName(cfg.StartType), nil
}

func stateName(s svc.State) string {
	switch s {
	case svc.Running:
		return "running"
	case svc.Stopped:
		return "stopped"
	case svc.StartPending:
		return "start_pending"
	case svc.StopPending:
		return "stop_pending"
	}
	return "unknown"
}

func startModeName(t uint32) string {
	switch t {
	case mgr.StartAutomatic:
		return StartModeAuto
	case mgr.StartManual:
		return StartModeDemand
	case mgr.StartDisabled:
		return StartModeDisabled
	}
	return fmt.Sprintf("start_type_%d", t)
}

// SetAutomatic changes only the start type (SERVICE_NO_CHANGE for the
// rest: the account and its password are left alone).
func (s winSCM) SetAutomatic(context.Context) error {
	m, sv, err := s.open()
	if err != nil {
		return err
	}
	defer m.Disconnect()
	defer sv.Close()
	return windows.ChangeServiceConfig(sv.Handle, windows.SERVICE_NO_CHANGE, windows.SERVICE_AUTO_START,
		windows.SERVICE_NO_CHANGE, nil, nil, nil, nil, nil, nil, nil)
}

func (s winSCM) Start(ctx context.Context) error {
	m, sv, err := s.open()
	if err != nil {
		return err
	}
	defer m.Disconnect()
	defer sv.Close()
	return startAndWait(ctx, sv)
}

func startAndWait(ctx context.Context, sv *mgr.Service) error {
	st, err := sv.Query()
	if err != nil {
		return err
	}
	if st.State == svc.Running {
		return nil
	}
	if st.State != svc.StartPending {
		if err := sv.Start(); err != nil && !errors.Is(err, windows.ERROR_SERVICE_ALREADY_RUNNING) {
			return err
		}
	}
	return waitState(ctx, sv, svc.Running)
}

// Restart stops the service's running dependants (UmRdpService), the
// service, then starts it and them again.
func (s winSCM) Restart(ctx context.Context) error {
	m, sv, err := s.open()
	if err != nil {
		return err
	}
	defer m.Disconnect()
	defer sv.Close()
	deps, err := sv.ListDependentServices(svc.Active)
	if err != nil {
		return fmt.Errorf("list %s's dependants: %w", s.name, err)
	}
	for _, d := range deps {
		if err := stop(ctx, m, d); err != nil {
			return fmt.Errorf("stop %s: %w", d, err)
		}
	}
	if _, err := sv.Control(svc.Stop); err != nil && !errors.Is(err, windows.ERROR_SERVICE_NOT_ACTIVE) {
		return fmt.Errorf("stop %s: %w", s.name, err)
	}
	if err := waitState(ctx, sv, svc.Stopped); err != nil {
		return err
	}
	if err := startAndWait(ctx, sv); err != nil {
		return err
	}
	for _, d := range deps {
		if ds, err := m.OpenService(d); err == nil {
			_ = ds.Start()
			_ = ds.Close()
		}
	}
	return nil
}

func stop(ctx context.Context, m *mgr.Mgr, name string) error {
	sv, err := m.OpenService(name)
	if err != nil {
		return err
	}
	defer sv.Close()
	if _, err := sv.Control(svc.Stop); err != nil && !errors.Is(err, windows.ERROR_SERVICE_NOT_ACTIVE) {
		return err
	}
	return waitState(ctx, sv, svc.Stopped)
}

func waitState(ctx context.Context, sv *mgr.Service, want svc.State) error {
	deadline := time.Now().Add(scmWait)
	for {
		st, err := sv.Query()
		if err != nil {
			return err
		}
		if st.State == want {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the service is %s after %s", stateName(st.State), scmWait)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}
