package main

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// A loopback Engine is named localhost by default: browsers refuse IP
// addresses as WebAuthn relying parties, and passkeys should work locally.
func TestDefaultPublicURLNamesLoopbackLocalhost(t *testing.T) {
	t.Parallel()
	require.Equal(t, "http://localhost:8080", defaultPublicURL("127.0.0.1:8080"))
	require.Equal(t, "http://localhost:9000", defaultPublicURL("[::1]:9000"))
	require.Equal(t, "http://0.0.0.0:8080", defaultPublicURL("0.0.0.0:8080"))
	require.Equal(t, "http://cairn.lan:8080", defaultPublicURL("cairn.lan:8080"))
}
