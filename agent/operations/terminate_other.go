//go:build !linux && !windows

package operations

import (
	"context"
	"runtime"
	"time"

	"github.com/cairn-rmm/cairn/agent/proto"
)

// terminate is not implemented here yet; the Engine shows the operator
// why rather than a failure that looks transient.
func terminate(context.Context, int, string, time.Duration) (proto.ProcessTerminated, error) {
	return proto.ProcessTerminated{}, opError(proto.CodeOpUnsupported, "terminating processes is not supported on %s yet", runtime.GOOS)
}
