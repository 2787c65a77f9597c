// Package version is the agent binary's identity: its release version, the
// build ID the Engine's artifact catalog knows it by, and the platform it
// was built for. make sets Version and BuildID with -ldflags -X; the
// Engine reads an artifact's build ID from the sidecar file make writes
// next to it (<binary>.build-id), so the two always agree.
package version

import (
	"os"
	"runtime"
	"strconv"
	"sync"

	"github.com/cairn-rmm/cairn/agent/proto"
)

// Version is the agent's release version
// (-X github.com/cairn-rmm/cairn/agent/version.Version=...).
var Version = "dev"

// BuildID names this exact build
// (-X github.com/cairn-rmm/cairn/agent/version.BuildID=...). Empty when the
// binary was built without it; Build then derives one from the binary.
var BuildID = ""

// BuildSeq orders builds (-X github.com/cairn-rmm/cairn/agent/version.BuildSeq=N,
// make uses the commit count): an agent refuses an update to a lower
// sequence unless the update is a signed rollback. Empty or malformed: 0,
// an unordered development build.
var BuildSeq = ""

// Seq is BuildSeq as a number (0 when unset or malformed).
func Seq() int64 {
	n, err := strconv.ParseInt(BuildSeq, 10, 64)
	if err != nil || n < 0 {
		return 0
	}
	return n
}

// DevPrefix starts the build ID of a binary built without one
// (proto.DevBuildID, shared with the Engine's catalog).
const DevPrefix = proto.DevBuildPrefix

var (
	buildOnce sync.Once
	buildID   string
)

// Build returns the build ID: BuildID, or for a binary built without one
// "dev-<sha256 prefix of the running executable>" ("dev-unknown" when the
// executable cannot be read).
func Build() string {
	buildOnce.Do(func() {
		buildID = BuildID
		if buildID != "" {
			return
		}
		buildID = DevPrefix + "unknown"
		exe, err := os.Executable()
		if err != nil {
			return
		}
		if sum, err := FileSHA256(exe); err == nil {
			buildID = DevBuildID(sum)
		}
	})
	return buildID
}

// DevBuildID is the build ID of a binary without an embedded one, from the
// hex SHA-256 of its content.
func DevBuildID(sha256Hex string) string { return proto.DevBuildID(sha256Hex) }

// Platform is the platform this binary runs on, as artifacts name it
// ("linux-amd64", "windows-amd64").
func Platform() string { return runtime.GOOS + "-" + runtime.GOARCH }

// FileSHA256 is the hex SHA-256 of a file's content.
func FileSHA256(path string) (string, error) { return proto.FileSHA256(path) }
