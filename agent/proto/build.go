package proto

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
)

// A binary built without a build ID (go build, not make) is named by its
// content: "dev-" and the first DevHashLen hex digits of its SHA-256. The
// agent derives it for itself (agent/version) and the Engine's artifact
// catalog for an artifact without a sidecar file, so both agree.
const (
	DevBuildPrefix = "dev-"
	DevHashLen     = 12
)

// DevBuildID is the build ID of a binary without an embedded one, from the
// hex SHA-256 of its content.
func DevBuildID(sha256Hex string) string {
	if len(sha256Hex) > DevHashLen {
		sha256Hex = sha256Hex[:DevHashLen]
	}
	return DevBuildPrefix + sha256Hex
}

// FileSHA256 is the hex SHA-256 of a file's content (an artifact's, or the
// running agent's own executable).
func FileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
