//go:build !linux && !windows

package shells

import "errors"

// supported: remote shells are implemented on Linux and Windows only.
const supported = false

func startTerminal(cols, rows int) (terminal, error) {
	return nil, errors.New("remote shells are not supported on this platform")
}
