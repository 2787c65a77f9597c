package agent_test

import (
	"crypto/ed25519"
	"encoding/base64"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn/agent"
	"github.com/cairn-rmm/cairn/internal/testdir"
)

var update = flag.Bool("update", false, "rewrite golden files")

// setup creates an agent.json with a server URL in a fresh directory and
// returns its path.
func setup(t *testing.T) string {
	t.Helper()
	path := filepath.Join(testdir.New(t), agent.FileName)
	c := agent.Default()
	c.ServerURL = "https://engine.example.test"
	c.EnrollmentCode = "code-1"
	require.NoError(t, agent.Create(path, "install", c))
	return path
}

func TestIPFallbackProblem(t *testing.T) {
	t.Parallel()
	for ip, ok := range map[string]bool{
		"": true, "192.0.2.10": true, "2001:db8::1": true, "127.0.0.1": true,
		"0.0.0.0": false, "::": false, "192.0.2.10:443": false, "[2001:db8::1]": false,
		"engine.example.test": false, "fe80::1%eth0": false, " 192.0.2.10": false, "192.0.2": false,
	} {
		require.Equal(t, ok, agent.IPFallbackProblem(ip) == "", "ip %q", ip)
	}
}

func TestValidateRejectsBadFields(t *testing.T) {
	t.Parallel()
	for name, mutate := range map[string]func(*agent.Config){
		"server url scheme":   func(c *agent.Config) { c.ServerURL = "ftp://engine" },
		"server url relative": func(c *agent.Config) { c.ServerURL = "engine.example.test" },
		"fallback with port":  func(c *agent.Config) { c.ServerIPFallback = "192.0.2.1:443" },
		"negative retention":  func(c *agent.Config) { c.Agent.LogRetentionDays = -1 },
		"short private key":   func(c *agent.Config) { c.Ed25519PrivateKey = base64.StdEncoding.EncodeToString([]byte("short")) },
		"bad trust key":       func(c *agent.Config) { c.ScriptSigning.TrustedPublicKeys = []string{"bm9wZQ=="} },
		"metadata field 0": func(c *agent.Config) {
			c.Metadata.Queued = []agent.MetadataEntry{{FieldNumber: 0}}
		},
		"metadata ack key": func(c *agent.Config) {
			c.Metadata.Acknowledged = map[string]agent.MetadataValue{"007": {}}
		},
	} {
		c := agent.Default()
		mutate(c)
		require.Error(t, c.Validate(), name)
	}
	require.NoError(t, agent.Default().Validate())
}

func TestGoldenRoundTrip(t *testing.T) {
	t.Parallel()
	golden := filepath.Join("testdata", "agent.json")
	if *update {
		c := agent.Default()
		c.ServerURL = "https://engine.example.test"
		c.ServerIPFallback = "192.0.2.10"
		c.EnrollmentCode = "ENROLL-1234"
		c.Agent.GUID = "6f1c2d3e-0000-4000-8000-000000000001"
		c.Agent.AgentID = "agent-0001"
		c.Agent.InstalledBuildID = "build-2026.11.1"
		c.Agent.State = agent.State{Revision: 7, Writer: "run", LastWriteAt: time.Date(2026, 11, 21, 9, 0, 0, 0, time.UTC)}
		c.Agent.Liveness = []byte(`{"last_heartbeat_at":"2026-11-21T08:59:40Z"}`)
		c.Agent.DependencyState = []byte(`{"wireguard":"installed"}`)
		c.Agent.Route = []byte(`{"site_worker":"hq"}`)
		seed := make([]byte, ed25519.SeedSize)
		c.Ed25519PrivateKey = base64.StdEncoding.EncodeToString(ed25519.NewKeyFromSeed(seed))
		c.AccessToken = "access-token"
		c.RefreshToken = "refresh-token"
		c.InternalCAPEM = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
		c.ScriptSigning.TrustedPublicKeys = []string{base64.StdEncoding.EncodeToString(ed25519.NewKeyFromSeed(seed).Public().(ed25519.PublicKey))}
		_, err := c.SetMetadata(12, "rack 4", time.Date(2026, 11, 21, 8, 30, 0, 0, time.UTC))
		require.NoError(t, err)
		c.Metadata.Acknowledged["11"] = agent.MetadataValue{Value: "finance", ModifiedAt: time.Date(2026, 11, 20, 8, 0, 0, 0, time.UTC)}
		b, err := c.Marshal()
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(golden, b, 0o600))
	}
	want, err := os.ReadFile(golden)
	require.NoError(t, err)
	c, err := agent.Parse(want)
	require.NoError(t, err)
	require.Equal(t, "192.0.2.10", c.ServerIPFallback)
	require.Equal(t, int64(7), c.Agent.State.Revision)
	require.Equal(t, "refresh-token", c.RefreshToken)
	got, err := c.Marshal()
	require.NoError(t, err)
	require.Equal(t, string(want), string(got))
}

func TestSchemaVersion(t *testing.T) {
	t.Parallel()
	_, err := agent.Parse([]byte(`{"schema_version": 4, "server_url": "https://e.test"}`))
	require.ErrorIs(t, err, agent.ErrNewerSchema)
	require.Contains(t, err.Error(), "schema_version 4")

	c, err := agent.Parse([]byte(`{"schema_version": 1, "server_url": "https://e.test", "agent": {"guid": "g1"}}`))
	require.NoError(t, err, "a version-1 file (before clone_ticket and generalized) migrates")
	require.Equal(t, agent.SchemaVersion, c.SchemaVersion)
	require.Empty(t, c.CloneTicket)
	require.False(t, c.Generalized)

	c, err = agent.Parse([]byte(`{"schema_version": 2, "server_url": "https://e.test", "agent": {"guid": "g1"}}`))
	require.NoError(t, err, "a version-2 file (before roles_stopped) migrates")
	require.Equal(t, 3, c.SchemaVersion)
	require.Empty(t, c.RolesStopped, "every role runs")

	c, err = agent.Parse([]byte(`{"server_url": "https://e.test", "agent": {"guid": "g1"}}`))
	require.NoError(t, err, "an unversioned (version 0) file migrates")
	require.Equal(t, agent.SchemaVersion, c.SchemaVersion)
	require.Equal(t, "g1", c.Agent.GUID)

	_, err = agent.Parse([]byte(`{"schema_version": 1, "sever_url": "typo"}`))
	require.ErrorContains(t, err, "sever_url")
	_, err = agent.Parse([]byte(`{"schema_version": -1}`))
	require.Error(t, err)
	_, err = agent.Parse([]byte(`not json`))
	require.Error(t, err)
}

func TestCreateWritesPrivateFileWithKey(t *testing.T) {
	t.Parallel()
	path := setup(t)
	info, err := os.Stat(path)
	require.NoError(t, err)
	if os.PathSeparator == '/' {
		require.Equal(t, os.FileMode(0o600), info.Mode().Perm())
	}
	c, err := agent.Load(path)
	require.NoError(t, err)
	key, err := c.PrivateKey()
	require.NoError(t, err, "a missing key is generated on first write")
	require.Len(t, key, ed25519.PrivateKeySize)
	require.Equal(t, agent.State{Revision: 1, Writer: "install", LastWriteAt: c.Agent.State.LastWriteAt}, c.Agent.State)
	require.Error(t, agent.Create(path, "install", agent.Default()), "create refuses to overwrite")

	c, err = agent.Update(path, "metadata", func(*agent.Config) error { return nil })
	require.NoError(t, err)
	require.Equal(t, int64(2), c.Agent.State.Revision)
	require.Equal(t, "metadata", c.Agent.State.Writer)
	again, err := c.PrivateKey()
	require.NoError(t, err)
	require.Equal(t, key, again, "the key survives later writes")
}

func TestUpdateErrorWritesNothing(t *testing.T) {
	t.Parallel()
	path := setup(t)
	before, err := os.ReadFile(path)
	require.NoError(t, err)
	_, err = agent.Update(path, "run", func(c *agent.Config) error {
		c.ServerURL = "https://other.test"
		return fmt.Errorf("boom")
	})
	require.EqualError(t, err, "boom")
	_, err = agent.Update(path, "run", func(c *agent.Config) error {
		c.ServerIPFallback = "not-an-ip"
		return nil
	})
	require.ErrorContains(t, err, "server_ip_fallback")
	after, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, before, after)
	_, err = agent.Update(filepath.Join(testdir.New(t), agent.FileName), "run", func(*agent.Config) error { return nil })
	require.ErrorIs(t, err, os.ErrNotExist, "update never creates a file")
}

func TestInterruptedWriteLeavesOldFile(t *testing.T) {
	t.Parallel()
	path := setup(t)
	before, err := os.ReadFile(path)
	require.NoError(t, err)
	// A crash between temp write and rename leaves a temp file behind.
	tmp := path + ".tmp-crashed"
	require.NoError(t, os.WriteFile(tmp, before[:len(before)/2], 0o600))
	c, err := agent.Load(path)
	require.NoError(t, err)
	require.Equal(t, int64(1), c.Agent.State.Revision)

	_, err = agent.Update(path, "run", func(*agent.Config) error { return nil })
	require.NoError(t, err, "a leftover temp file does not block writes")
	removed, err := agent.CleanStaleTemps(filepath.Dir(path), time.Now().Add(2*time.Hour))
	require.NoError(t, err)
	require.Equal(t, []string{filepath.Base(tmp)}, removed)
	entries, err := os.ReadDir(filepath.Dir(path))
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	require.ElementsMatch(t, []string{agent.FileName, agent.FileName + ".lock"}, names, "successful writes leave no temp files")
}

func TestCleanStaleTemps(t *testing.T) {
	t.Parallel()
	dir := testdir.New(t)
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	for name, age := range map[string]time.Duration{
		"agent.json.tmp-old":     61 * time.Minute,
		"agent.json.tmp-ancient": 48 * time.Hour,
		"agent.json.tmp-young":   59 * time.Minute,
		"agent.json.tmp-edge":    time.Hour,
		"agent.json":             48 * time.Hour,
		"agent.json.lock":        48 * time.Hour,
		"other.tmp-old":          48 * time.Hour,
	} {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte("x"), 0o600))
		require.NoError(t, os.Chtimes(p, now.Add(-age), now.Add(-age)))
	}
	removed, err := agent.CleanStaleTemps(dir, now)
	require.NoError(t, err)
	require.ElementsMatch(t, []string{"agent.json.tmp-old", "agent.json.tmp-ancient"}, removed)
	for _, name := range []string{"agent.json.tmp-young", "agent.json.tmp-edge", "agent.json", "agent.json.lock", "other.tmp-old"} {
		require.FileExists(t, filepath.Join(dir, name))
	}
}

// TestConcurrentWritersInProcess: goroutines each queue their own fields;
// a reader polls meanwhile and must always see a whole, valid file.
func TestConcurrentWritersInProcess(t *testing.T) {
	t.Parallel()
	path := setup(t)
	const writers, each = 6, 10
	stop := make(chan struct{})
	readerDone := make(chan error, 1)
	go func() {
		for {
			select {
			case <-stop:
				readerDone <- nil
				return
			default:
			}
			if _, err := agent.Load(path); err != nil {
				readerDone <- err
				return
			}
		}
	}()
	errs := make(chan error, writers*each)
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				_, err := agent.Update(path, "metadata", func(c *agent.Config) error {
					_, err := c.SetMetadata(1+w*each+i, "v", time.Now())
					return err
				})
				errs <- err // require must not run off the test goroutine
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	close(stop)
	require.NoError(t, <-readerDone)
	c, err := agent.Load(path)
	require.NoError(t, err)
	require.Len(t, c.PendingMetadata(), writers*each, "no writer lost another's change")
	require.Equal(t, int64(1+writers*each), c.Agent.State.Revision)
}

const helperEnv = "CAIRN_AGENT_CONFIG_HELPER"

// TestConcurrentWritersAcrossProcesses re-executes the test binary as
// several writer processes sharing one file.
func TestConcurrentWritersAcrossProcesses(t *testing.T) {
	t.Parallel()
	path := setup(t)
	const procs, each = 4, 15
	cmds := make([]*exec.Cmd, procs)
	for p := range procs {
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(os.Environ(), helperEnv+"="+path, "CAIRN_AGENT_CONFIG_BASE="+strconv.Itoa(1+p*each), "CAIRN_AGENT_CONFIG_COUNT="+strconv.Itoa(each))
		require.NoError(t, cmd.Start())
		cmds[p] = cmd
	}
	for _, cmd := range cmds {
		require.NoError(t, cmd.Wait())
	}
	c, err := agent.Load(path)
	require.NoError(t, err)
	require.Len(t, c.PendingMetadata(), procs*each, "no process lost another's change")
	require.Equal(t, int64(1+procs*each), c.Agent.State.Revision)
}

// TestMain doubles the test binary as the writer process of
// TestConcurrentWritersAcrossProcesses: with helperEnv set it writes its
// share of metadata and exits instead of running the tests.
func TestMain(m *testing.M) {
	path := os.Getenv(helperEnv)
	if path == "" {
		os.Exit(m.Run())
	}
	if err := writeShare(path); err != nil {
		fmt.Fprintln(os.Stderr, "writer process:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

func writeShare(path string) error {
	base, err := strconv.Atoi(os.Getenv("CAIRN_AGENT_CONFIG_BASE"))
	if err != nil {
		return err
	}
	count, err := strconv.Atoi(os.Getenv("CAIRN_AGENT_CONFIG_COUNT"))
	if err != nil {
		return err
	}
	for i := range count {
		_, err := agent.Update(path, "metadata", func(c *agent.Config) error {
			_, err := c.SetMetadata(base+i, fmt.Sprintf("pid %d", os.Getpid()), time.Now())
			return err
		})
		if err != nil {
			return err
		}
	}
	return nil
}
