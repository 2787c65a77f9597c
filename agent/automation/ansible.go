package automation

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	goruntime "runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/cairn-rmm/cairn/agent/proto"
)

// Ansible playbooks (proto.LangAnsible): the agent runs ansible-playbook
// on the signed playbook against localhost with connection local, as the
// privileged local executor it already is for scripts: no inbound SSH, no
// inventory of other hosts, the same signature checks, timeout and
// process-group kill, output streamed the same way. The playbook's
// parameters are its extra vars (a JSON file given with -e @file, never
// spliced into the command line) and, as for scripts, CAIRN_PARAM_<NAME>.
// Everything Ansible writes (its home, local and "remote" temp files, the
// retry file it is told not to write) stays in the run's directory, which
// is removed afterwards; an empty ansible.cfg there keeps a configuration
// in the agent's working directory or /etc/ansible from changing how the
// run behaves.

// AnsibleBinary is the program looked up on the run's PATH.
const AnsibleBinary = "ansible-playbook"

// ansibleVersionTimeout bounds `ansible-playbook --version`.
const ansibleVersionTimeout = 30 * time.Second

// playbook writes the run's files into dir and returns the command line
// and environment that run it. A missing or too old ansible-playbook is
// ansible_unavailable, Windows unsupported_language.
func (r *runner) playbook(ctx context.Context, dir string, job proto.ScriptJob, env []string) ([]string, []string, string, error) {
	if goruntime.GOOS == "windows" {
		return nil, nil, "", unsupported(job.Language)
	}
	bin, err := lookAnsible(r.searchPath())
	if err != nil {
		return nil, nil, "", err
	}
	for _, sub := range []string{"home", "tmp", "remote"} {
		if err := os.Mkdir(filepath.Join(dir, sub), 0o700); err != nil {
			return nil, nil, "", fmt.Errorf("ansible directory: %w", err)
		}
	}
	env = append(env,
		"ANSIBLE_CONFIG="+filepath.Join(dir, "ansible.cfg"),
		"ANSIBLE_HOME="+filepath.Join(dir, "home"),
		"ANSIBLE_LOCAL_TEMP="+filepath.Join(dir, "tmp"),
		"ANSIBLE_REMOTE_TEMP="+filepath.Join(dir, "remote"),
		"ANSIBLE_RETRY_FILES_ENABLED=False",
		"ANSIBLE_NOCOLOR=True",
		"ANSIBLE_FORCE_COLOR=False",
		"ANSIBLE_STDOUT_CALLBACK=default",
		"ANSIBLE_LOCALHOST_WARNING=False",
		"ANSIBLE_INVENTORY_UNPARSED_WARNING=False",
		"ANSIBLE_PYTHON_INTERPRETER=auto_silent",
		"PYTHONUNBUFFERED=1",
	)
	version, err := r.ansibleVersion(ctx, bin, env)
	if err != nil {
		return nil, nil, "", err
	}
	vars, err := json.Marshal(job.Parameters)
	if err != nil {
		return nil, nil, "", err
	}
	if job.Parameters == nil {
		vars = []byte("{}")
	}
	files := map[string][]byte{"ansible.cfg": nil, "playbook.yml": []byte(job.Body), "parameters.json": vars}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), content, 0o600); err != nil {
			return nil, nil, "", fmt.Errorf("write %s: %w", name, err)
		}
	}
	argv := []string{bin, "--inventory", "localhost,", "--connection", "local", "--limit", "localhost",
		"--extra-vars", "@" + filepath.Join(dir, "parameters.json"), filepath.Join(dir, "playbook.yml")}
	return argv, env, version, nil
}

// searchPath is the PATH the run looks ansible-playbook up on.
func (r *runner) searchPath() string {
	if r.opts.Path != "" {
		return r.opts.Path
	}
	return os.Getenv("PATH")
}

func lookAnsible(path string) (string, error) {
	for _, d := range filepath.SplitList(path) {
		if d == "" || !filepath.IsAbs(d) {
			continue
		}
		p := filepath.Join(d, AnsibleBinary)
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", &proto.Error{Code: proto.CodeAnsibleUnavailable,
		Message: "ansible-playbook is not installed on this device (not on the agent's PATH); install Ansible (Debian and Ubuntu: apt-get install ansible) and run the playbook again"}
}

// ansibleVersions caches `ansible-playbook --version` per binary and
// modification time (an upgrade is noticed at the next run).
var ansibleVersions sync.Map

var (
	coreVersion   = regexp.MustCompile(`\[core (\d+\.\d+(?:\.\d+)?)`)
	legacyVersion = regexp.MustCompile(`^ansible-playbook (\d+\.\d+(?:\.\d+)?)`)
)

// ansibleVersion is the ansible-core version of bin; older than
// proto.AnsibleMinCoreVersion, or not answering, is ansible_unavailable.
func (r *runner) ansibleVersion(ctx context.Context, bin string, env []string) (string, error) {
	st, err := os.Stat(bin)
	if err != nil {
		return "", &proto.Error{Code: proto.CodeAnsibleUnavailable, Message: "ansible-playbook cannot be read: " + err.Error()}
	}
	key := bin + "@" + st.ModTime().String()
	if v, ok := ansibleVersions.Load(key); ok {
		return v.(string), nil
	}
	vctx, cancel := context.WithTimeout(ctx, ansibleVersionTimeout)
	defer cancel()
	cmd := exec.CommandContext(vctx, bin, "--version")
	cmd.Env = env
	out, err := cmd.Output()
	if err != nil {
		return "", &proto.Error{Code: proto.CodeAnsibleUnavailable, Message: "ansible-playbook --version failed: " + err.Error()}
	}
	version := ""
	if m := coreVersion.FindSubmatch(out); m != nil {
		version = string(m[1])
	} else if m := legacyVersion.FindSubmatch(out); m != nil {
		version = string(m[1])
	}
	if version == "" {
		return "", &proto.Error{Code: proto.CodeAnsibleUnavailable, Message: "ansible-playbook --version names no version"}
	}
	if versionLess(version, proto.AnsibleMinCoreVersion) {
		return "", &proto.Error{Code: proto.CodeAnsibleUnavailable,
			Message: fmt.Sprintf("ansible-playbook is ansible-core %s; playbooks need %s or later", version, proto.AnsibleMinCoreVersion)}
	}
	ansibleVersions.Store(key, version)
	return version, nil
}

// versionLess compares dotted numeric versions.
func versionLess(a, b string) bool {
	as, bs := strings.Split(a, "."), strings.Split(b, ".")
	for i := range max(len(as), len(bs)) {
		var x, y int
		if i < len(as) {
			x, _ = strconv.Atoi(as[i])
		}
		if i < len(bs) {
			y, _ = strconv.Atoi(bs[i])
		}
		if x != y {
			return x < y
		}
	}
	return false
}

var recapLine = regexp.MustCompile(`^\S+\s*:\s*((?:\w+=\d+\s*)+)$`)

// ParseRecap reads the PLAY RECAP at the end of ansible-playbook's
// default output, summing its hosts (only localhost here); nil when the
// output has none (a syntax error, a run killed at its timeout).
func ParseRecap(out string) *proto.AnsibleRecap {
	i := strings.LastIndex(out, "PLAY RECAP")
	if i < 0 {
		return nil
	}
	var rc *proto.AnsibleRecap
	for _, line := range strings.Split(out[i:], "\n")[1:] {
		m := recapLine.FindStringSubmatch(strings.TrimSpace(line))
		if m == nil {
			continue
		}
		if rc == nil {
			rc = &proto.AnsibleRecap{}
		}
		for _, kv := range strings.Fields(m[1]) {
			k, v, _ := strings.Cut(kv, "=")
			n, _ := strconv.Atoi(v)
			switch k {
			case "ok":
				rc.Ok += n
			case "changed":
				rc.Changed += n
			case "unreachable":
				rc.Unreachable += n
			case "failed":
				rc.Failed += n
			case "skipped":
				rc.Skipped += n
			case "rescued":
				rc.Rescued += n
			case "ignored":
				rc.Ignored += n
			}
		}
	}
	return rc
}

// tailBuffer keeps the last max bytes written: the recap is at the end
// of an output that may be longer than what is kept of it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > t.max {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-t.max:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}
