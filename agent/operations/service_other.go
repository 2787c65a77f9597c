//go:build !linux && !windows

package operations

import (
	"context"
	"runtime"

	"github.com/cairn-rmm/cairn/agent/proto"
)

// controlService is not implemented here yet (Windows services would go
// through golang.org/x/sys/windows/svc/mgr).
func controlService(_ context.Context, _ bool, _, name, _ string) (string, error) {
	return name, opError(proto.CodeOpUnsupported, "controlling services is not supported on %s yet", runtime.GOOS)
}
