// Package testport hands tests a TCP port on 127.0.0.1 for a server they
// start later, or stop and start again on the same port.
//
// Asking the kernel for port 0 and closing the listener is racy when the
// port is bound later: the kernel gives the same range (ip_local_port_range)
// to every outgoing connection, and a loaded test run makes thousands, so
// one of them can take the port first ("address already in use"). The ports
// handed out here lie below that range, where the kernel never assigns one
// by itself; a bind check skips ports something already listens on, and
// no port is handed out twice by one process.
package testport

import (
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// span is how many ports below the ephemeral range are candidates.
const span = 10000

var (
	mu     sync.Mutex
	handed = map[int]bool{}
)

// Free returns a port on 127.0.0.1 that nothing listens on, outside the
// kernel's ephemeral range.
func Free(t testing.TB) int {
	t.Helper()
	low := ephemeralLow()
	first := max(low-span, 1024)
	mu.Lock()
	defer mu.Unlock()
	for range 1000 {
		p := first + rand.IntN(low-first)
		if handed[p] {
			continue
		}
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
		if err != nil {
			continue
		}
		_ = l.Close()
		handed[p] = true
		return p
	}
	t.Fatalf("testport: no free port in %d..%d", first, low-1)
	return 0
}

// ephemeralLow is the first port of the kernel's ephemeral range (Linux;
// 32768, its usual value, elsewhere).
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if n, err := strconv.Atoi(f[0]); err == nil && n > 2048 {
				return n
			}
		}
	}
	return 32768
}
