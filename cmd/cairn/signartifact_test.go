package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/internal/agentartifacts"
)

// `cairn sign-artifact` needs nothing but files: it makes a key, signs a
// binary with its sidecars, and the Engine's catalog, given only the
// public key, serves that signature.
func TestSignArtifactOffline(t *testing.T) {
	t.Parallel()
	offline, engineDir := t.TempDir(), t.TempDir()
	keyFile := filepath.Join(offline, "artifact.key")
	var out bytes.Buffer
	require.NoError(t, signArtifact([]string{"--generate-key", "--key", keyFile}, &out))
	line := strings.TrimSpace(out.String())
	require.True(t, strings.HasPrefix(line, agentartifacts.EnvArtifactPublicKey+"="), line)
	public := strings.TrimPrefix(line, agentartifacts.EnvArtifactPublicKey+"=")
	require.Error(t, signArtifact([]string{"--generate-key", "--key", keyFile}, &out), "a key is never overwritten")

	bin := filepath.Join(engineDir, "linux-amd64", "cairn-agent")
	require.NoError(t, os.MkdirAll(filepath.Dir(bin), 0o755))
	require.NoError(t, os.WriteFile(bin, []byte("an agent build"), 0o755))
	require.NoError(t, os.WriteFile(bin+agentartifacts.BuildIDSuffix, []byte("v9\n"), 0o644))
	require.NoError(t, signArtifact([]string{"--key", keyFile, "--platform", "linux-amd64", "--artifact", bin, "--build-seq", "9",
		"--rollback"}, &out))

	key, err := agentartifacts.OfflineKey(public)
	require.NoError(t, err)
	a, err := agentartifacts.New(engineDir, agentartifacts.Options{ArtifactKey: key}).Current("linux-amd64")
	require.NoError(t, err)
	require.NotNil(t, a.ArtifactSignature)
	payload, err := a.ArtifactSignature.Verify([]string{public})
	require.NoError(t, err)
	var art proto.UpdateArtifact
	require.NoError(t, json.Unmarshal(payload, &art))
	require.Equal(t, proto.PurposeArtifact, art.Purpose)
	require.Equal(t, "v9", art.BuildID)
	require.EqualValues(t, 9, art.BuildSeq)
	require.True(t, art.Rollback)

	require.Error(t, signArtifact([]string{"--key", keyFile}, &out), "a platform and an artifact are required")
}
