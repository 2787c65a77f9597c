package inventory

import (
	"context"
	"errors"
	"fmt"
	"unsafe"

	"golang.org/x/sys/windows"

	"github.com/cairn-rmm/cairn/agent/proto"
)

// collectServices lists the Win32 services (not drivers) from the service
// control manager: name, display name and state from one
// EnumServicesStatusEx, then each service's start type from
// QueryServiceConfig and its description and delayed start from
// QueryServiceConfig2 (best effort: a service this account may not query
// keeps an empty start mode).
func collectServices(ctx context.Context, _ *Collector, inv *proto.Inventory) error {
	m, err := windows.OpenSCManager(nil, nil, windows.SC_MANAGER_ENUMERATE_SERVICE|windows.SC_MANAGER_CONNECT)
	if err != nil {
		return fmt.Errorf("OpenSCManager: %w", err)
	}
	defer windows.CloseServiceHandle(m)
	rows, err := enumServices(m)
	if err != nil {
		return err
	}
	for i := range rows {
		if err := ctx.Err(); err != nil {
			return err
		}
		serviceConfig(m, &rows[i])
	}
	inv.Services = windowsServices(rows)
	return nil
}

func enumServices(m windows.Handle) ([]winService, error) {
	var needed, count, resume uint32
	buf := make([]byte, 64<<10)
	var rows []winService
	for {
		err := windows.EnumServicesStatusEx(m, windows.SC_ENUM_PROCESS_INFO, windows.SERVICE_WIN32, windows.SERVICE_STATE_ALL,
			&buf[0], uint32(len(buf)), &needed, &count, &resume, nil)
		more := errors.Is(err, windows.ERROR_MORE_DATA)
		if err != nil && !more {
			return nil, fmt.Errorf("EnumServicesStatusEx: %w", err)
		}
		if count > 0 {
			entries := unsafe.Slice((*windows.ENUM_SERVICE_STATUS_PROCESS)(unsafe.Pointer(&buf[0])), count)
			for _, e := range entries {
				rows = append(rows, winService{
					Name:        windows.UTF16PtrToString(e.ServiceName),
					DisplayName: windows.UTF16PtrToString(e.DisplayName),
					State:       e.ServiceStatusProcess.CurrentState,
				})
			}
		}
		if !more {
			return rows, nil
		}
		if count == 0 {
			// Not even one entry fit: grow to what the SCM asked for.
			if needed <= uint32(len(buf)) {
				return nil, errors.New("EnumServicesStatusEx: more data, but no size given")
			}
			buf = make([]byte, needed)
		}
	}
}

// serviceConfig fills the start type, delayed start and description.
func serviceConfig(m windows.Handle, s *winService) {
	name, err := windows.UTF16PtrFromString(s.Name)
	if err != nil {
		return
	}
	h, err := windows.OpenService(m, name, windows.SERVICE_QUERY_CONFIG)
	if err != nil {
		return
	}
	defer windows.CloseServiceHandle(h)
	n := uint32(8 << 10)
	for range 3 {
		buf := make([]byte, n)
		cfg := (*windows.QUERY_SERVICE_CONFIG)(unsafe.Pointer(&buf[0]))
		err := windows.QueryServiceConfig(h, cfg, n, &n)
		if err == nil {
			s.StartType, s.HasConfig = cfg.StartType, true
			break
		}
		if !errors.Is(err, windows.ERROR_INSUFFICIENT_BUFFER) {
			return
		}
	}
	if b := serviceConfig2(h, windows.SERVICE_CONFIG_DESCRIPTION); b != nil {
		s.Description = windows.UTF16PtrToString((*windows.SERVICE_DESCRIPTION)(unsafe.Pointer(&b[0])).Description)
	}
	if b := serviceConfig2(h, windows.SERVICE_CONFIG_DELAYED_AUTO_START_INFO); b != nil {
		s.Delayed = (*windows.SERVICE_DELAYED_AUTO_START_INFO)(unsafe.Pointer(&b[0])).IsDelayedAutoStartUp != 0
	}
}

// serviceConfig2 returns QueryServiceConfig2's buffer, nil when it fails.
func serviceConfig2(h windows.Handle, level uint32) []byte {
	n := uint32(1 << 10)
	for range 3 {
		buf := make([]byte, n)
		err := windows.QueryServiceConfig2(h, level, &buf[0], n, &n)
		if err == nil {
			return buf
		}
		if !errors.Is(err, windows.ERROR_INSUFFICIENT_BUFFER) {
			return nil
		}
	}
	return nil
}
