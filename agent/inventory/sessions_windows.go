package inventory

import (
	"context"
	"fmt"
	"net"
	"unsafe"

	"golang.org/x/sys/windows"

	"github.com/cairn-rmm/cairn/agent/proto"
)

var (
	wtsapi32                        = windows.NewLazySystemDLL("wtsapi32.dll")
	procWTSQuerySessionInformationW = wtsapi32.NewProc("WTSQuerySessionInformationW")
)

// wtsCurrentServer is WTS_CURRENT_SERVER_HANDLE: this machine.
const wtsCurrentServer = 0

// WTS_INFO_CLASS values used here.
const (
	wtsUserName      = 5
	wtsDomainName    = 7
	wtsClientAddress = 14
	wtsSessionInfo   = 24
)

// wtsInfo is WTSINFOW; only LogonTime is read.
type wtsInfo struct {
	State          uint32
	SessionID      uint32
	Counters       [6]uint32
	WinStationName [32]uint16
	Domain         [17]uint16
	UserName       [21]uint16
	ConnectTime    int64
	DisconnectTime int64
	LastInputTime  int64
	LogonTime      int64
	CurrentTime    int64
}

// wtsQuery returns one WTSQuerySessionInformation buffer as bytes.
func wtsQuery(id uint32, class uintptr) []byte {
	var p *byte
	var n uint32
	r, _, _ := procWTSQuerySessionInformationW.Call(uintptr(wtsCurrentServer), uintptr(id), class,
		uintptr(unsafe.Pointer(&p)), uintptr(unsafe.Pointer(&n)))
	if r == 0 || p == nil {
		return nil
	}
	defer windows.WTSFreeMemory(uintptr(unsafe.Pointer(p)))
	return append([]byte(nil), unsafe.Slice(p, n)...)
}

func wtsString(id uint32, class uintptr) string {
	b := wtsQuery(id, class)
	if len(b) < 2 {
		return ""
	}
	return windows.UTF16ToString(unsafe.Slice((*uint16)(unsafe.Pointer(&b[0])), len(b)/2))
}

// wtsSessions lists the sessions of this machine with their users
// (WTSEnumerateSessions, then WTSQuerySessionInformation per session).
func wtsSessions() ([]winSession, error) {
	var infos *windows.WTS_SESSION_INFO
	var count uint32
	if err := windows.WTSEnumerateSessions(wtsCurrentServer, 0, 1, &infos, &count); err != nil {
		return nil, fmt.Errorf("WTSEnumerateSessions: %w", err)
	}
	defer windows.WTSFreeMemory(uintptr(unsafe.Pointer(infos)))
	var out []winSession
	for _, si := range unsafe.Slice(infos, count) {
		s := winSession{ID: si.SessionID, Station: windows.UTF16PtrToString(si.WindowStationName), State: si.State,
			User: wtsString(si.SessionID, wtsUserName), Domain: wtsString(si.SessionID, wtsDomainName)}
		if b := wtsQuery(si.SessionID, wtsClientAddress); len(b) >= 8 {
			// WTS_CLIENT_ADDRESS: a DWORD family, then the address; IPv4
			// sits at bytes 2..5 of it.
			if fam := *(*uint32)(unsafe.Pointer(&b[0])); fam == windows.AF_INET && len(b) >= 4+6 {
				if ip := net.IPv4(b[6], b[7], b[8], b[9]); !ip.IsUnspecified() {
					s.Client = ip.String()
				}
			}
		}
		if b := wtsQuery(si.SessionID, wtsSessionInfo); len(b) >= int(unsafe.Sizeof(wtsInfo{})) {
			info := (*wtsInfo)(unsafe.Pointer(&b[0]))
			if info.LogonTime > 0 {
				s.LogonAt = filetimeToTime(uint64(info.LogonTime))
			}
		}
		out = append(out, s)
	}
	return out, nil
}

func collectSessions(_ context.Context, _ *Collector, inv *proto.Inventory) error {
	ss, err := wtsSessions()
	if err != nil {
		return err
	}
	inv.Sessions = windowsSessions(ss)
	return nil
}

// loggedInUsers are the distinct users of the machine's sessions, sorted.
func loggedInUsers(context.Context) ([]string, error) {
	ss, err := wtsSessions()
	if err != nil {
		return nil, err
	}
	return sessionUsers(ss), nil
}
