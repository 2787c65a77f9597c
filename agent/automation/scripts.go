// Package scripts runs the Engine's signed script payloads on the agent
// (event quick_job_run): the payload must verify with a trusted
// script-signing key (agent.VerifyScript), then the script runs with its
// timeout (the whole process group is killed when it expires), its
// parameters as CAIRN_PARAM_<NAME> environment variables (never spliced
// into the body), stdout and stderr bounded to proto.MaxScriptOutput each,
// and its output so far posted to the Engine while it runs.
package automation

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/cairn-rmm/cairn/agent"
	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/agent/runtime"
)

// DefaultOutputInterval is how often live output is posted at most.
const DefaultOutputInterval = 500 * time.Millisecond

// killGrace is how long the runner waits for output pipes after the
// script's process group was killed (a daemon it started may hold them).
const killGrace = 2 * time.Second

// Options configure the runner.
type Options struct {
	// Config loads agent.json (trusted keys and the device GUID).
	Config func() (*agent.Config, error)
	// OutputInterval bounds live-output posts (DefaultOutputInterval).
	OutputInterval time.Duration
	// TempDir holds the script files while they run (os.TempDir()).
	TempDir string
	// AgentBinary and ConfigPath are the running agent's executable and
	// agent.json, given to scripts as CAIRN_AGENT_BIN and
	// CAIRN_AGENT_CONFIG so they can call the agent's command line (e.g.
	// `--metadata set <n> <value>`, the bundled metadata scripts). Empty:
	// not set.
	AgentBinary string
	ConfigPath  string
	// Path, when set, is the PATH scripts run with instead of the agent's
	// own (a service manager often starts the agent with a minimal one;
	// tests put stand-in package managers first).
	Path string
	// UserSession launches user-context jobs (ScriptJob.RunAs
	// current_user) into the active user's session; nil refuses them
	// (proto.CodeUserContextUnsupported). NewUserSession is the
	// platform's (nil off Windows).
	UserSession UserSession
	Logger      *slog.Logger
	Now         func() time.Time
}

// Register adds the quick_job_run handler.
func Register(h *runtime.Handlers, opts Options) error {
	r, err := newRunner(opts)
	if err != nil {
		return err
	}
	return h.Register(proto.EventQuickJobRun, r.handle)
}

// Queued returns what the agent runs after its socket connects: it asks
// the Engine for work queued while it was offline
// (POST /api/agent/script/request), runs each job as if it came over the
// socket (same verification), and posts each outcome to
// /api/agent/script/result. Use it as runtime.Options.OnConnected.
func Queued(opts Options) (func(ctx context.Context, call runtime.Caller), error) {
	r, err := newRunner(opts)
	if err != nil {
		return nil, err
	}
	return r.queued, nil
}

func (r *runner) queued(ctx context.Context, call runtime.Caller) {
	var resp proto.ScriptRequestResponse
	if err := call.Call(ctx, http.MethodPost, proto.PathScriptRequest, struct{}{}, &resp); err != nil {
		r.opts.Logger.Warn("could not ask for queued script work", "err", err)
		return
	}
	for _, j := range resp.Jobs {
		raw, err := json.Marshal(j.Signed)
		if err != nil {
			continue
		}
		post := proto.ScriptResultPost{RunID: j.RunID}
		res, err := r.handle(ctx, call, raw)
		if err != nil {
			var pe *proto.Error
			if !errors.As(err, &pe) {
				pe = &proto.Error{Code: proto.CodeOpFailed, Message: err.Error()}
			}
			post.Error = pe
		} else {
			post.Result = res.(proto.ScriptResult)
		}
		if err := call.Call(ctx, http.MethodPost, proto.PathScriptResult, post, nil); err != nil {
			r.opts.Logger.Warn("could not post a queued script's result", "run_id", j.RunID, "err", err)
		}
	}
}

func newRunner(opts Options) (*runner, error) {
	if opts.Config == nil {
		return nil, errors.New("scripts: Options.Config is required")
	}
	if opts.OutputInterval <= 0 {
		opts.OutputInterval = DefaultOutputInterval
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &runner{opts: opts}, nil
}

type runner struct{ opts Options }

func (r *runner) handle(ctx context.Context, call runtime.Caller, payload json.RawMessage) (any, error) {
	var sg proto.Signed
	if err := json.Unmarshal(payload, &sg); err != nil {
		return nil, &proto.Error{Code: proto.CodeSignatureInvalid, Message: "the payload is not a signed document"}
	}
	cfg, err := r.opts.Config()
	if err != nil {
		return nil, fmt.Errorf("load config: %w", err)
	}
	job, err := agent.VerifyScript(cfg, sg, r.opts.Now())
	if err != nil {
		r.opts.Logger.Warn("refused a script payload", "key_id", sg.KeyID, "err", err)
		return nil, err
	}
	return r.Run(ctx, call, job)
}

// Run executes a verified job. call (may be nil) receives live output.
func (r *runner) Run(ctx context.Context, call runtime.Caller, job proto.ScriptJob) (proto.ScriptResult, error) {
	asUser := false
	switch job.RunAs {
	case "", proto.RunAsSystem:
	case proto.RunAsCurrentUser:
		if r.opts.UserSession == nil {
			if err := userContextRefusal(); err != nil {
				return proto.ScriptResult{}, err
			}
			return proto.ScriptResult{}, &proto.Error{Code: proto.CodeUserContextUnsupported, Message: "this agent cannot run jobs in the user's session"}
		}
		asUser = true
	default:
		return proto.ScriptResult{}, &proto.Error{Code: proto.CodeOpInvalid, Message: fmt.Sprintf("run_as %q is not system or current_user", job.RunAs)}
	}
	ansible := job.Language == proto.LangAnsible
	if ansible && asUser {
		return proto.ScriptResult{}, &proto.Error{Code: proto.CodeOpInvalid, Message: "a playbook runs as the agent's account only, not current_user"}
	}
	var argv []string
	ext := ""
	if !ansible {
		var err error
		if argv, ext, err = command(job.Language); err != nil {
			return proto.ScriptResult{}, err
		}
	}
	env, extra, err := r.environment(job)
	if err != nil {
		return proto.ScriptResult{}, err
	}
	dir, err := os.MkdirTemp(r.opts.TempDir, "cairn-script-")
	if err != nil {
		return proto.ScriptResult{}, fmt.Errorf("script directory: %w", err)
	}
	defer os.RemoveAll(dir)
	var cmd *exec.Cmd
	version := ""
	if ansible {
		if argv, env, version, err = r.playbook(ctx, dir, job, env); err != nil {
			return proto.ScriptResult{}, err
		}
		cmd = exec.Command(argv[0], argv[1:]...)
		cmd.Dir, cmd.Env = dir, env
	} else {
		file := filepath.Join(dir, "script"+ext)
		cmd = exec.Command(argv[0], append(argv[1:], file)...)
		cmd.Dir, cmd.Env = dir, env
		if asUser {
			// Before the script is written: the user's read access to the
			// directory is inherited by the file made in it.
			release, err := r.opts.UserSession.Prepare(cmd, dir, extra)
			if err != nil {
				var pe *proto.Error
				if errors.As(err, &pe) {
					return proto.ScriptResult{}, err
				}
				return proto.ScriptResult{}, &proto.Error{Code: proto.CodeOpFailed, Message: "could not start the job in the user's session: " + err.Error()}
			}
			defer release()
		}
		if err := os.WriteFile(file, []byte(job.Body), 0o700); err != nil {
			return proto.ScriptResult{}, fmt.Errorf("write script: %w", err)
		}
	}

	timeout := time.Duration(max(job.TimeoutSeconds, 1)) * time.Second
	rctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	stdout, stderr := &boundedBuffer{max: proto.MaxScriptOutput}, &boundedBuffer{max: proto.MaxScriptOutput}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	// A playbook's recap ends its output, which may be longer than what
	// is kept of it.
	tail := &tailBuffer{max: 64 << 10}
	if ansible {
		cmd.Stdout = io.MultiWriter(stdout, tail)
	}
	setProcessGroup(cmd)
	cmd.WaitDelay = killGrace

	started := r.opts.Now().UTC()
	var proc process = execProcess{cmd}
	if asUser {
		// Not cmd.Start: os/exec cannot put the process on the user's
		// interactive desktop (winsta0\default), which a process started
		// from the service's session needs (startUser).
		proc, err = startUser(cmd)
	} else {
		err = cmd.Start()
	}
	if err != nil {
		return proto.ScriptResult{}, &proto.Error{Code: proto.CodeOpFailed, Message: "the script could not start: " + err.Error()}
	}
	type exit struct {
		code int
		err  error
	}
	waitDone := make(chan exit, 1)
	go func() { code, err := proc.wait(); waitDone <- exit{code, err} }()

	live := r.liveOutput(ctx, call, job.RunID, stdout, stderr)
	timedOut := false
	var ended exit
	select {
	case ended = <-waitDone:
	case <-rctx.Done():
		timedOut = ctx.Err() == nil
		proc.kill()
		ended = <-waitDone
	}
	live.stop()
	finished := r.opts.Now().UTC()

	res := proto.ScriptResult{ExitCode: ended.code, TimedOut: timedOut,
		DurationMS: finished.Sub(started).Milliseconds(), StartedAt: started, FinishedAt: finished}
	if timedOut {
		// A killed script has no exit code of its own: Linux reports the
		// signal as -1, Windows the 1 TerminateProcess was given. Both say
		// -1, as the result's contract does.
		res.ExitCode = -1
	}
	if ended.err != nil && !timedOut {
		return proto.ScriptResult{}, &proto.Error{Code: proto.CodeOpFailed, Message: "the script could not run: " + ended.err.Error()}
	}
	if ctx.Err() != nil && !timedOut {
		return proto.ScriptResult{}, &proto.Error{Code: proto.CodeOpFailed, Message: "the agent stopped while the script ran"}
	}
	out, outCut := stdout.snapshot()
	errOut, errCut := stderr.snapshot()
	// The whole output goes to the Engine's output route; the reply (which
	// travels through the workflow history) carries a bounded copy.
	if call != nil && (out != "" || errOut != "") {
		post := proto.ScriptOutput{RunID: job.RunID, Stdout: out, Stderr: errOut, StdoutTruncated: outCut, StderrTruncated: errCut}
		if err := call.Call(ctx, http.MethodPost, proto.PathScriptOutput, post, nil); err != nil {
			r.opts.Logger.Warn("could not post the final script output", "run_id", job.RunID, "err", err)
		}
	}
	if ansible && !timedOut {
		if res.Ansible = ParseRecap(tail.String()); res.Ansible != nil {
			res.Ansible.Version = version
		}
	}
	res.Stdout, res.StdoutTruncated = cut(out, proto.MaxReplyOutput, outCut)
	res.Stderr, res.StderrTruncated = cut(errOut, proto.MaxReplyOutput, errCut)
	return res, nil
}

// process is a started script: wait returns its exit code once it and
// its output are done (err only when it could not run at all); kill ends
// it and what it started.
type process interface {
	wait() (int, error)
	kill()
}

// execProcess is a script os/exec started.
type execProcess struct{ cmd *exec.Cmd }

func (p execProcess) wait() (int, error) {
	err := p.cmd.Wait()
	if p.cmd.ProcessState == nil {
		return -1, err
	}
	return p.cmd.ProcessState.ExitCode(), nil
}

func (p execProcess) kill() { killGroup(p.cmd) }

// cut bounds s to n bytes (on a rune boundary), keeping the flag when it
// was already cut.
func cut(s string, n int, already bool) (string, bool) {
	if len(s) <= n {
		return s, already
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n], true
}

// Environment variables every script gets besides its parameters.
const (
	EnvRunID       = "CAIRN_RUN_ID"
	EnvAgentBinary = "CAIRN_AGENT_BIN"
	EnvAgentConfig = "CAIRN_AGENT_CONFIG"
)

// environment is the agent's environment plus the run ID, the agent's own
// executable and config, and the parameters. A name the Engine should have
// refused is refused here too. extra is what a user-context job gets on
// top of the user's own environment: the run ID and the parameters (the
// agent's executable and config are the privileged account's business).
func (r *runner) environment(job proto.ScriptJob) (env, extra []string, err error) {
	extra = []string{EnvRunID + "=" + job.RunID}
	for name, val := range job.Parameters {
		if !validParam(name) || strings.ContainsRune(val, 0) {
			return nil, nil, &proto.Error{Code: proto.CodeOpInvalid, Message: fmt.Sprintf("parameter %q is not a valid name or value", name)}
		}
		extra = append(extra, "CAIRN_PARAM_"+strings.ToUpper(name)+"="+val)
	}
	env = os.Environ()
	if r.opts.Path != "" {
		env = slices.DeleteFunc(env, func(kv string) bool { return strings.HasPrefix(strings.ToUpper(kv), "PATH=") })
		env = append(env, "PATH="+r.opts.Path)
	}
	if r.opts.AgentBinary != "" {
		env = append(env, EnvAgentBinary+"="+r.opts.AgentBinary)
	}
	if r.opts.ConfigPath != "" {
		env = append(env, EnvAgentConfig+"="+r.opts.ConfigPath)
	}
	return append(env, extra...), extra, nil
}

func validParam(name string) bool {
	if name == "" || len(name) > 64 {
		return false
	}
	for i, c := range name {
		switch {
		case c == '_', c >= 'A' && c <= 'Z', c >= 'a' && c <= 'z':
		case c >= '0' && c <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}

func unsupported(lang string) error {
	return &proto.Error{Code: proto.CodeUnsupportedLanguage, Message: fmt.Sprintf("this agent cannot run %q scripts", lang)}
}

// boundedBuffer keeps the first max bytes written and notes the rest.
type boundedBuffer struct {
	mu        sync.Mutex
	max       int
	buf       []byte
	truncated bool
	version   int
}

func (b *boundedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	room := b.max - len(b.buf)
	if room < len(p) {
		b.truncated = true
		if room > 0 {
			b.buf = append(b.buf, p[:room]...)
		}
	} else {
		b.buf = append(b.buf, p...)
	}
	b.version++
	return len(p), nil
}

func (b *boundedBuffer) snapshot() (string, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return string(b.buf), b.truncated
}

func (b *boundedBuffer) changes() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.version
}

// livePoster posts the output so far every interval while it changes.
type livePoster struct {
	done chan struct{}
	wg   sync.WaitGroup
}

func (l *livePoster) stop() {
	if l == nil {
		return
	}
	close(l.done)
	l.wg.Wait()
}

func (r *runner) liveOutput(ctx context.Context, call runtime.Caller, runID string, stdout, stderr *boundedBuffer) *livePoster {
	if call == nil || runID == "" {
		return nil
	}
	l := &livePoster{done: make(chan struct{})}
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		t := time.NewTicker(r.opts.OutputInterval)
		defer t.Stop()
		seen := 0
		for {
			select {
			case <-l.done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
			}
			v := stdout.changes() + stderr.changes()
			if v == seen {
				continue
			}
			seen = v
			out, outCut := stdout.snapshot()
			errOut, errCut := stderr.snapshot()
			post := proto.ScriptOutput{RunID: runID, Stdout: out, Stderr: errOut, StdoutTruncated: outCut, StderrTruncated: errCut}
			if err := call.Call(ctx, http.MethodPost, proto.PathScriptOutput, post, nil); err != nil {
				r.opts.Logger.Debug("live output post failed", "run_id", runID, "err", err)
			}
		}
	}()
	return l
}
