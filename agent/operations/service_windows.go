package operations

import (
	"context"
	"errors"
	"time"

	"golang.org/x/sys/windows"
	"golang.org/x/sys/windows/svc"
	"golang.org/x/sys/windows/svc/mgr"

	"github.com/cairn-rmm/cairn/agent/proto"
)

// scmPoll is how often a service's state is read while waiting for it to
// settle: the SCM has no blocking wait that also honours a context, and
// sc.exe and services.msc poll the same way.
const scmPoll = 100 * time.Millisecond

// controlService starts, stops or restarts a Windows service through the
// service control manager and waits until it is running (start, restart)
// or stopped (stop), or ctx ends. Starting a running service and stopping
// a stopped one succeed without doing anything. The SCM matches names
// without regard to case; the name is returned as asked.
func controlService(ctx context.Context, _ bool, _, name, action string) (string, error) {
	m, err := mgr.Connect()
	if err != nil {
		return name, scmError(name, "connecting to the service control manager", err)
	}
	defer m.Disconnect()
	h, err := windows.OpenService(m.Handle, windows.StringToUTF16Ptr(name),
		windows.SERVICE_START|windows.SERVICE_STOP|windows.SERVICE_QUERY_STATUS)
	if err != nil {
		return name, scmError(name, "opening the service", err)
	}
	s := &mgr.Service{Name: name, Handle: h}
	defer s.Close()
	switch action {
	case proto.ServiceStop:
		return name, stopService(ctx, s)
	case proto.ServiceRestart:
		if err := stopService(ctx, s); err != nil {
			return name, err
		}
	}
	return name, startService(ctx, s)
}

func startService(ctx context.Context, s *mgr.Service) error {
	err := s.Start()
	if err != nil && !errors.Is(err, windows.ERROR_SERVICE_ALREADY_RUNNING) {
		return scmError(s.Name, "starting", err)
	}
	st, err := waitService(ctx, s, svc.Running)
	if err != nil {
		return err
	}
	if st.State != svc.Running {
		return opError(proto.CodeOpFailed, "service %s stopped while starting (exit code %d, service exit code %d); see the System event log",
			s.Name, st.Win32ExitCode, st.ServiceSpecificExitCode)
	}
	return nil
}

func stopService(ctx context.Context, s *mgr.Service) error {
	_, err := s.Control(svc.Stop)
	if err != nil && !errors.Is(err, windows.ERROR_SERVICE_NOT_ACTIVE) {
		return scmError(s.Name, "stopping", err)
	}
	st, err := waitService(ctx, s, svc.Stopped)
	if err != nil {
		return err
	}
	if st.State != svc.Stopped {
		return opError(proto.CodeOpFailed, "service %s did not stop (state %d)", s.Name, st.State)
	}
	return nil
}

// waitService polls until the service reaches want, or settles in another
// state that is not pending (a service that fails while starting ends up
// stopped), or ctx ends.
func waitService(ctx context.Context, s *mgr.Service, want svc.State) (svc.Status, error) {
	t := time.NewTicker(scmPoll)
	defer t.Stop()
	for {
		st, err := s.Query()
		if err != nil {
			return st, scmError(s.Name, "querying", err)
		}
		switch st.State {
		case want:
			return st, nil
		case svc.Stopped, svc.Running, svc.Paused:
			// Settled elsewhere: a stop still going from Running is
			// waited for (the stop pending state can lag), a start that
			// fell back to Stopped is not.
			if !(want == svc.Stopped && st.State == svc.Running) {
				return st, nil
			}
		}
		select {
		case <-ctx.Done():
			return st, ctx.Err()
		case <-t.C:
		}
	}
}

// scmError maps the SCM's refusals to operation codes.
func scmError(name, doing string, err error) error {
	switch {
	case errors.Is(err, windows.ERROR_SERVICE_DOES_NOT_EXIST):
		return opError(proto.CodeOpNotFound, "no service %s", name)
	case errors.Is(err, windows.ERROR_ACCESS_DENIED):
		return opError(proto.CodeOpPermission, "%s %s: %v", doing, name, err)
	}
	return opError(proto.CodeOpFailed, "%s %s: %v", doing, name, err)
}
