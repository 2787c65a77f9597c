package agentartifacts

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn/agent/proto"
)

// An Engine holding the artifact key signs each artifact with it: the
// artifact purpose, the binary's identity and its build sequence.
func TestCatalogSignsWithTheArtifactKey(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeArtifact(t, dir, "linux-amd64", "b7", 1024)
	path := filepath.Join(dir, "linux-amd64", "cairn-agent")
	require.NoError(t, os.WriteFile(path+BuildSeqSuffix, []byte("7\n"), 0o644))
	keyFile := filepath.Join(t.TempDir(), "k", "artifact.key")
	key, err := LoadOrCreateKeyFile(keyFile)
	require.NoError(t, err)
	again, err := LoadOrCreateKeyFile(keyFile)
	require.NoError(t, err)
	require.Equal(t, key.PublicBase64(), again.PublicBase64(), "the key file is made once, then read")
	info, err := os.Stat(keyFile)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), info.Mode().Perm())

	a, err := New(dir, Options{ArtifactKey: key}).Current("linux-amd64")
	require.NoError(t, err)
	require.NotNil(t, a.ArtifactSignature)
	payload, err := a.ArtifactSignature.Verify([]string{key.PublicBase64()})
	require.NoError(t, err)
	var art proto.UpdateArtifact
	require.NoError(t, json.Unmarshal(payload, &art))
	require.Equal(t, proto.UpdateArtifact{Purpose: proto.PurposeArtifact, ArtifactID: a.ID, Platform: "linux-amd64", BuildID: "b7",
		SHA256: a.SHA256, Size: 1024, BuildSeq: 7}, art)
}

// With the key kept offline the Engine signs nothing; a .sig file made
// elsewhere for this very binary is served (with the sequence and
// rollback flag it signed), one for another binary is ignored.
func TestCatalogServesOfflineSignatures(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeArtifact(t, dir, "linux-amd64", "b3", 2048)
	path := filepath.Join(dir, "linux-amd64", "cairn-agent")
	offlineFile := filepath.Join(t.TempDir(), "offline.key")
	offline, err := GenerateKeyFile(offlineFile)
	require.NoError(t, err)
	_, err = GenerateKeyFile(offlineFile)
	require.Error(t, err, "an existing key is never overwritten")
	public, err := OfflineKey(offline.PublicBase64())
	require.NoError(t, err)
	require.True(t, public.Offline())
	c := New(dir, Options{ArtifactKey: public})
	a, err := c.Current("linux-amd64")
	require.NoError(t, err)
	require.Nil(t, a.ArtifactSignature, "an offline key signs nothing on the Engine")

	// The offline machine signs the binary (cairn sign-artifact).
	desc, err := Describe("linux-amd64", path)
	require.NoError(t, err)
	art := UpdateArtifactOf(desc)
	art.BuildSeq, art.Rollback = 3, true
	sg, err := offline.Sign(art)
	require.NoError(t, err)
	raw, err := json.Marshal(sg)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path+SignatureSuffix, raw, 0o644))
	a, err = c.Current("linux-amd64")
	require.NoError(t, err)
	require.NotNil(t, a.ArtifactSignature)
	require.Equal(t, sg, *a.ArtifactSignature)
	require.EqualValues(t, 3, a.BuildSeq)

	// The binary is rebuilt: the old .sig no longer matches it.
	writeArtifact(t, dir, "linux-amd64", "b3", 2049)
	later := time.Now().Add(time.Second)
	require.NoError(t, os.Chtimes(path, later, later))
	a, err = c.Current("linux-amd64")
	require.NoError(t, err)
	require.Nil(t, a.ArtifactSignature)

	// A signature by another key is ignored too.
	other, err := GenerateKeyFile(filepath.Join(t.TempDir(), "other.key"))
	require.NoError(t, err)
	desc, err = Describe("linux-amd64", path)
	require.NoError(t, err)
	sg, err = other.Sign(UpdateArtifactOf(desc))
	require.NoError(t, err)
	raw, err = json.Marshal(sg)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path+SignatureSuffix, raw, 0o644))
	require.NoError(t, os.Chtimes(path+SignatureSuffix, later.Add(time.Second), later.Add(time.Second)))
	a, err = New(dir, Options{ArtifactKey: public}).Current("linux-amd64")
	require.NoError(t, err)
	require.Nil(t, a.ArtifactSignature)
}
