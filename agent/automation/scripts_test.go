package automation_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn/agent"
	"github.com/cairn-rmm/cairn/agent/automation"
	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/agent/runtime"
	"github.com/cairn-rmm/cairn/internal/testdir"
)

// caller records the live-output posts a script makes.
type caller struct {
	mu    sync.Mutex
	posts []proto.ScriptOutput
}

func (c *caller) Call(_ context.Context, method, path string, in, _ any) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if method == "POST" && path == proto.PathScriptOutput {
		c.posts = append(c.posts, in.(proto.ScriptOutput))
	}
	return nil
}

func (c *caller) all() []proto.ScriptOutput {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]proto.ScriptOutput(nil), c.posts...)
}

type env struct {
	handler runtime.Handler
	priv    ed25519.PrivateKey
	guid    string
	tempDir string
}

func setup(t *testing.T) *env { return setupWith(t, nil) }

// setupWith lets a test change the runner's options (its PATH).
func setupWith(t *testing.T, change func(*automation.Options)) *env {
	t.Helper()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	cfg := agent.Default()
	cfg.Agent.GUID = "guid-test"
	cfg.ScriptSigning.TrustedPublicKeys = []string{base64.StdEncoding.EncodeToString(pub)}
	h := runtime.NewHandlers()
	opts := automation.Options{
		Config:         func() (*agent.Config, error) { return cfg, nil },
		OutputInterval: 50 * time.Millisecond, TempDir: testdir.New(t),
	}
	if change != nil {
		change(&opts)
	}
	require.NoError(t, automation.Register(h, opts))
	return &env{handler: h.Lookup(proto.EventQuickJobRun), priv: priv, guid: cfg.Agent.GUID, tempDir: opts.TempDir}
}

func (e *env) payload(t *testing.T, job proto.ScriptJob) json.RawMessage {
	t.Helper()
	if job.DeviceGUID == "" {
		job.DeviceGUID = e.guid
	}
	if job.TimeoutSeconds == 0 {
		job.TimeoutSeconds = 60
	}
	job.RunID = "run-1"
	job.Purpose = proto.PurposeScript
	if job.ExpiresAt == nil {
		exp := time.Now().Add(time.Hour)
		job.ExpiresAt = &exp
	}
	b, err := json.Marshal(job)
	require.NoError(t, err)
	raw, err := json.Marshal(proto.Signed{Payload: b, KeyID: "k", Signature: ed25519.Sign(e.priv, b)})
	require.NoError(t, err)
	return raw
}

func (e *env) run(t *testing.T, c runtime.Caller, job proto.ScriptJob) (proto.ScriptResult, error) {
	t.Helper()
	out, err := e.handler(context.Background(), c, e.payload(t, job))
	if err != nil {
		return proto.ScriptResult{}, err
	}
	return out.(proto.ScriptResult), nil
}

func code(t *testing.T, err error) string {
	t.Helper()
	var pe *proto.Error
	require.ErrorAs(t, err, &pe)
	return pe.Code
}

func TestRefusals(t *testing.T) {
	t.Parallel()
	e := setup(t)
	_, err := e.run(t, nil, proto.ScriptJob{Language: foreignLanguage, Body: "hi"})
	require.Equal(t, proto.CodeUnsupportedLanguage, code(t, err))
	_, err = e.run(t, nil, proto.ScriptJob{Language: nativeLanguage, Body: "exit 0", DeviceGUID: "someone-else"})
	require.Equal(t, proto.CodeSignatureInvalid, code(t, err))

	// A stranger's key: nothing runs.
	_, stranger, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	marker := filepath.Join(testdir.New(t), "ran")
	b, _ := json.Marshal(proto.ScriptJob{RunID: "r", DeviceGUID: e.guid, Language: nativeLanguage, Body: touchScript(marker), TimeoutSeconds: 5})
	raw, _ := json.Marshal(proto.Signed{Payload: b, Signature: ed25519.Sign(stranger, b)})
	_, err = e.handler(context.Background(), nil, raw)
	require.Equal(t, proto.CodeSignatureInvalid, code(t, err))
	require.NoFileExists(t, marker)
	_, err = e.handler(context.Background(), nil, json.RawMessage(`"not signed"`))
	require.Equal(t, proto.CodeSignatureInvalid, code(t, err))
}
