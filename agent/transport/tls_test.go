package transport

import (
	"encoding/pem"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestLoadCAFile(t *testing.T) {
	t.Parallel()
	env := setup(t)
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(content), 0o600))
		return p
	}
	leaf := string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: env.cert.Certificate[0]}))
	bundle := "# Engine CA\n" + env.caPEM + otherCAPEM(t)

	got, err := LoadCAFile(write("ca.pem", env.caPEM))
	require.NoError(t, err)
	require.Equal(t, env.caPEM, got)
	got, err = LoadCAFile(write("bundle.pem", bundle))
	require.NoError(t, err)
	require.Equal(t, bundle, got, "the file is stored as it is")
	cas, err := ParseCAPEM(bundle)
	require.NoError(t, err)
	require.Len(t, cas, 2)

	for _, tc := range []struct {
		path string
		want string
	}{
		{write("leaf.pem", leaf), "is not a CA certificate"},
		{write("empty.pem", "nothing here\n"), "no PEM CERTIFICATE block"},
		{write("key-only.pem", "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"), "no PEM CERTIFICATE block"},
		{write("garbage.pem", "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"), "CA certificate 1:"},
		{filepath.Join(dir, "missing.pem"), "no such file"},
		{dir, "not a regular file"},
	} {
		_, err := LoadCAFile(tc.path)
		require.ErrorContains(t, err, tc.want, tc.path)
	}
}
