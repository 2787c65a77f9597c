package agentupdates

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/agent/runtime"
)

// engine stands in for the Engine's two update routes: it serves one
// artifact's bytes and records the progress posts.
type engine struct {
	mu       sync.Mutex
	artifact []byte
	posts    []proto.UpdateProgress
	manifest proto.UpdateManifest
}

func (e *engine) Call(_ context.Context, method, path string, in, out any) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	switch path {
	case proto.PathUpdateManifest + "?platform=linux-amd64":
		*out.(*proto.UpdateManifest) = e.manifest
		return nil
	case proto.PathUpdateProgress:
		e.posts = append(e.posts, in.(proto.UpdateProgress))
		return nil
	}
	return errors.New("unexpected call " + method + " " + path)
}

func (e *engine) Open(context.Context, string) (io.ReadCloser, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return io.NopCloser(bytes.NewReader(e.artifact)), nil
}

func (e *engine) phases() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []string
	for _, p := range e.posts {
		for _, ev := range p.Events {
			out = append(out, ev.Phase)
		}
	}
	return out
}

func (e *engine) last() proto.UpdateProgress {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.posts[len(e.posts)-1]
}

// fixture is an installed "agent" (a shell script that reports its build)
// with an updater over it.
type fixture struct {
	exe       string
	key       ed25519.PrivateKey // the artifact key
	pub       string
	scriptKey ed25519.PrivateKey // the script key: signs the legacy signature only
	seq       int64              // this build's sequence
	offerSeq  int64              // the next offer's sequence
	rollback  bool               // the next offer is a signed rollback
	eng       *engine
	u         *Updater
	restarts  chan struct{}
	cancel    context.CancelFunc
}

func script(build string) []byte {
	return []byte("#!/bin/sh\necho 'cairn-agent test'\necho 'build_id: " + build + "'\necho 'platform: linux-amd64'\n")
}

// newFixtureSeq is newFixture for a build with a sequence number.
func newFixtureSeq(t *testing.T, build string, seq int64) *fixture {
	t.Helper()
	return newFixtureOf(t, build, time.Hour, seq)
}

func newFixture(t *testing.T, build string, deadline time.Duration) *fixture {
	t.Helper()
	return newFixtureOf(t, build, deadline, 0)
}

func newFixtureOf(t *testing.T, build string, deadline time.Duration, seq int64) *fixture {
	t.Helper()
	dir := t.TempDir()
	exe := filepath.Join(dir, "cairn-agent")
	if _, err := os.Stat(exe); err != nil {
		require.NoError(t, os.WriteFile(exe, script(build), 0o755))
	}
	pub, key, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	_, scriptKey, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	f := &fixture{exe: exe, key: key, pub: base64.StdEncoding.EncodeToString(pub), scriptKey: scriptKey, eng: &engine{},
		restarts: make(chan struct{}, 4), seq: seq}
	f.start(t, build, deadline)
	return f
}

// start runs an updater as the process built as build would.
func (f *fixture) start(t *testing.T, build string, deadline time.Duration) {
	t.Helper()
	if f.cancel != nil {
		f.cancel()
	}
	f.u = New(Options{Exe: f.exe, BuildID: build, Platform: "linux-amd64",
		BuildSeq: f.seq, ArtifactKeys: func() ([]string, error) { return []string{f.pub}, nil },
		Restart: func() { f.restarts <- struct{}{} }, CheckinDeadline: deadline})
	ctx, cancel := context.WithCancel(context.Background())
	f.cancel = cancel
	t.Cleanup(cancel)
	f.u.Session(f.eng)
	go f.u.Run(ctx)
}

// offer signs an artifact holding body as build.
func (f *fixture) offer(build string, body []byte) proto.AgentUpdateRequest {
	sum := sha256.Sum256(body)
	art := proto.UpdateArtifact{ArtifactID: "linux-amd64-" + hex.EncodeToString(sum[:8]), Platform: "linux-amd64", BuildID: build,
		SHA256: hex.EncodeToString(sum[:]), Size: int64(len(body))}
	legacy, _ := json.Marshal(art)
	art.Purpose, art.BuildSeq, art.Rollback = proto.PurposeArtifact, f.offerSeq, f.rollback
	payload, _ := json.Marshal(art)
	signed := &proto.Signed{Payload: payload, KeyID: "k", Signature: ed25519.Sign(f.key, payload)}
	f.eng.mu.Lock()
	f.eng.artifact = body
	f.eng.manifest = proto.UpdateManifest{Platform: art.Platform, ArtifactID: art.ArtifactID, BuildID: build, SHA256: art.SHA256,
		Size: art.Size, DownloadURL: "/api/agent/update/download/" + art.ArtifactID,
		Signature:         proto.Signed{Payload: legacy, KeyID: "s", Signature: ed25519.Sign(f.scriptKey, legacy)},
		ArtifactSignature: signed}
	f.eng.mu.Unlock()
	return proto.AgentUpdateRequest{OperationID: "op-" + build, ArtifactID: art.ArtifactID, BuildID: build, SHA256: art.SHA256,
		Size: art.Size, DownloadURL: f.eng.manifest.DownloadURL, Signature: f.eng.manifest.Signature,
		ArtifactSignature: f.eng.manifest.ArtifactSignature, Force: true}
}

func (f *fixture) handle(t *testing.T, req proto.AgentUpdateRequest) (any, error) {
	t.Helper()
	h := runtime.NewHandlers()
	require.NoError(t, f.u.Register(h))
	raw, _ := json.Marshal(req)
	return h.Lookup(proto.EventAgentUpdate)(context.Background(), f.eng, raw)
}

// waitRestart waits for the updater to ask for a restart; an update that
// failed instead fails the test with its phases rather than hanging it.
func (f *fixture) waitRestart(t *testing.T) {
	t.Helper()
	select {
	case <-f.restarts:
	case <-time.After(5 * time.Minute): // a hang guard, not a timing claim
		t.Fatalf("the updater never asked for a restart; phases: %v", f.eng.phases())
	}
}

func (f *fixture) waitPhase(t *testing.T, phase string) {
	t.Helper()
	require.Eventually(t, func() bool {
		for _, p := range f.eng.phases() {
			if p == phase {
				return true
			}
		}
		return false
	}, 30*time.Second, 10*time.Millisecond, "no %s event; got %v", phase, f.eng.phases())
}

func TestUpdateInstallsCheckinAndCompletes(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "b1", time.Hour)
	req := f.offer("b2", script("b2"))
	res, err := f.handle(t, req)
	require.NoError(t, err)
	require.Equal(t, proto.AgentUpdateAccepted{Accepted: true}, res)
	f.waitRestart(t)
	require.Equal(t, []string{"accepted", "downloading", "verifying", "installing", "restarting"}, f.eng.phases())
	require.Equal(t, script("b2"), must(os.ReadFile(f.exe)), "the new build is installed")
	require.Equal(t, script("b1"), must(os.ReadFile(PreviousPath(f.exe))), "the old build is kept")

	// The new build starts, sees the marker and checks in.
	f.start(t, "b2", time.Hour)
	f.waitPhase(t, proto.UpdateVerifyingCheckin)
	// The Engine, restarted, delivers the request again: the new build
	// answers for the update under way instead of starting another.
	res, err = f.handle(t, req)
	require.NoError(t, err)
	require.Equal(t, proto.AgentUpdateAccepted{Accepted: true}, res)
	f.u.Heartbeat(time.Millisecond, nil)
	f.waitPhase(t, proto.UpdateCompleted)
	require.Equal(t, "b2", f.eng.last().BuildID)
	require.Eventually(t, func() bool { _, err := os.Stat(MarkerPath(f.exe)); return os.IsNotExist(err) }, 30*time.Second, 10*time.Millisecond)
	require.Equal(t, 1, strings.Count(strings.Join(f.eng.phases(), " "), "downloading"), "one download")
}

func TestUpdateRollsBackWithoutCheckin(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "b1", time.Millisecond)
	_, err := f.handle(t, f.offer("b2", script("b2")))
	require.NoError(t, err)
	f.waitRestart(t)
	// The new build never gets a heartbeat through: at the deadline it
	// puts the old binary back and restarts into it.
	f.start(t, "b2", time.Millisecond)
	f.waitRestart(t)
	require.Equal(t, script("b1"), must(os.ReadFile(f.exe)), "the previous build is restored")
	m, err := readMarker(f.exe)
	require.NoError(t, err)
	require.Equal(t, StateRolledBack, m.State)

	f.start(t, "b1", time.Hour)
	f.waitPhase(t, proto.UpdateRolledBack)
	require.Equal(t, "b1", f.eng.last().BuildID)
	require.Contains(t, f.eng.last().Events[len(f.eng.last().Events)-1].Message, "did not check in")
}

func TestUpdateRefusesBadArtifacts(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name   string
		tamper func(f *fixture, r *proto.AgentUpdateRequest)
		code   string // refused at once with this code; "" : fails later
	}{
		{"foreign key", func(f *fixture, r *proto.AgentUpdateRequest) {
			_, other, _ := ed25519.GenerateKey(rand.Reader)
			r.ArtifactSignature.Signature = ed25519.Sign(other, r.ArtifactSignature.Payload)
		}, proto.CodeSignatureInvalid},
		{"changed payload", func(f *fixture, r *proto.AgentUpdateRequest) {
			r.ArtifactSignature.Payload = bytes.Replace(r.ArtifactSignature.Payload, []byte("b2"), []byte("b3"), 1)
		}, proto.CodeSignatureInvalid},
		{"only the legacy signature", func(f *fixture, r *proto.AgentUpdateRequest) { r.ArtifactSignature = nil },
			proto.CodeSignatureInvalid},
		{"no purpose", func(f *fixture, r *proto.AgentUpdateRequest) {
			p := bytes.Replace(r.ArtifactSignature.Payload, []byte(`"purpose":"cairn/agent-artifact/v1",`), nil, 1)
			r.ArtifactSignature = &proto.Signed{Payload: p, Signature: ed25519.Sign(f.key, p)}
		}, proto.CodeSignatureInvalid},
		{"request differs from signature", func(f *fixture, r *proto.AgentUpdateRequest) { r.BuildID = "b3" }, proto.CodeSignatureInvalid},
		{"wrong bytes", func(f *fixture, r *proto.AgentUpdateRequest) {
			f.eng.artifact = bytes.ToUpper(f.eng.artifact)
		}, ""},
		{"wrong size", func(f *fixture, r *proto.AgentUpdateRequest) { f.eng.artifact = append(f.eng.artifact, '\n') }, ""},
		{"does not report its build", func(f *fixture, r *proto.AgentUpdateRequest) {
			*r = f.offer("b2", script("b9"))
		}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, "b1", time.Hour)
			req := f.offer("b2", script("b2"))
			c.tamper(f, &req)
			_, err := f.handle(t, req)
			if c.code != "" {
				var pe *proto.Error
				require.ErrorAs(t, err, &pe)
				require.Equal(t, c.code, pe.Code)
			} else {
				require.NoError(t, err)
				f.waitPhase(t, proto.UpdateFailed)
			}
			require.Equal(t, script("b1"), must(os.ReadFile(f.exe)), "the running build stays")
			_, err = os.Stat(MarkerPath(f.exe))
			require.True(t, os.IsNotExist(err))
			require.Empty(t, f.restarts)
			left, _ := filepath.Glob(filepath.Join(filepath.Dir(f.exe), ".cairn-agent.update-*"))
			require.Empty(t, left, "no download is left behind")
		})
	}
}

// Purpose separation: the agent trusts the script key (it signs
// scripts), but an update signed with it is refused; and a script
// payload signed with the artifact key is not an artifact either.
func TestUpdateRefusesTheScriptKey(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "b1", time.Hour)
	req := f.offer("b2", script("b2"))
	// An Engine (or a replica holding only the script key) signs the
	// manifest with the script key, in the slot the agent checks.
	req.ArtifactSignature = &proto.Signed{Payload: req.ArtifactSignature.Payload,
		Signature: ed25519.Sign(f.scriptKey, req.ArtifactSignature.Payload)}
	_, err := f.handle(t, req)
	var pe *proto.Error
	require.ErrorAs(t, err, &pe)
	require.Equal(t, proto.CodeSignatureInvalid, pe.Code)

	job, _ := json.Marshal(proto.ScriptJob{Purpose: proto.PurposeScript, RunID: "r", DeviceGUID: "g", Language: "sh", Body: "id"})
	_, err = f.handle(t, proto.AgentUpdateRequest{OperationID: "op-x", ArtifactSignature: &proto.Signed{Payload: job,
		Signature: ed25519.Sign(f.key, job)}})
	require.ErrorAs(t, err, &pe)
	require.Equal(t, proto.CodeSignatureInvalid, pe.Code)
	require.Empty(t, f.restarts)
}

// Builds are monotonic: a lower build sequence is refused, by request or
// by the hourly check, unless the signed artifact says it is a rollback.
func TestUpdateRefusesADowngradeUnlessASignedRollback(t *testing.T) {
	t.Parallel()
	f := newFixtureSeq(t, "b20", 20)
	f.offerSeq = 19
	req := f.offer("b19", script("b19"))
	_, err := f.handle(t, req)
	var pe *proto.Error
	require.ErrorAs(t, err, &pe)
	require.Equal(t, proto.CodeSignatureInvalid, pe.Code)
	require.Contains(t, pe.Message, "not a signed rollback")
	require.Error(t, f.u.Check(context.Background()), "the hourly check does not downgrade either")
	require.Empty(t, f.restarts)
	require.Equal(t, script("b20"), must(os.ReadFile(f.exe)))

	// The rollback flag is part of what the artifact key signs.
	f.rollback = true
	req = f.offer("b19", script("b19"))
	_, err = f.handle(t, req)
	require.NoError(t, err)
	f.waitRestart(t)
	require.Equal(t, script("b19"), must(os.ReadFile(f.exe)))
}

func TestCheckUpdatesOnlyToAnotherBuild(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "b1", time.Hour)
	f.offer("b1", script("b1"))
	require.NoError(t, f.u.Check(context.Background()))
	require.Empty(t, f.eng.phases(), "a matching build changes nothing")
	require.Empty(t, f.restarts)

	f.offer("b2", script("b2"))
	require.NoError(t, f.u.Check(context.Background()))
	f.waitRestart(t)
	first := f.eng.posts[0]
	require.Equal(t, "b2", first.ToBuildID, "an update the agent starts names its target")
	require.Equal(t, script("b2"), must(os.ReadFile(f.exe)))
}

func TestReportedBuild(t *testing.T) {
	t.Parallel()
	require.Equal(t, "abc", reportedBuild("cairn-agent 1.0\nbuild_id: abc\nplatform: linux-amd64\n"))
	require.Equal(t, "abc", reportedBuild("abc\n"))
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
