package patches

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/cairn-rmm/cairn/agent/proto"
)

// Progress is one report of an install under way.
type Progress struct {
	Phase   string
	Percent int
	Message string
}

// Installer installs one patch, reporting progress as it goes.
type Installer interface {
	Install(ctx context.Context, req proto.PatchInstallRequest, progress func(Progress)) (proto.PatchInstallResult, error)
}

// ErrNoPackage: the request names no package (a Linux install needs one).
var ErrNoPackage = errors.New("the request names no package")

// AptLockTimeout is how long apt waits for dpkg's lock held by another
// apt (unattended-upgrades, an operator) before failing the install.
const AptLockTimeout = 5 * time.Minute

// AptInstaller upgrades one package with apt-get. Zero fields take the
// system's tools.
type AptInstaller struct {
	AptGet    string // apt-get
	DpkgQuery string // dpkg-query
	// RebootFile is /var/run/reboot-required.
	RebootFile string
	// Extra are further -o options (tests point apt at a private root);
	// AdminDir is dpkg's database then (/var/lib/dpkg).
	Extra    []string
	AdminDir string
}

// AptInstallArgs are apt-get's arguments for upgrading pkg: only an
// upgrade of what is installed (--only-upgrade never installs a new
// package), non-interactive, keeping changed configuration files, waiting
// for dpkg's lock up to AptLockTimeout, and machine-readable progress on
// file descriptor 3 (APT::Status-Fd).
func AptInstallArgs(pkg string, extra ...string) []string {
	args := []string{"install", "-y", "-q", "--only-upgrade",
		"-o", "DPkg::Lock::Timeout=" + strconv.Itoa(int(AptLockTimeout/time.Second)),
		"-o", "APT::Status-Fd=3",
		"-o", "Dpkg::Options::=--force-confdef", "-o", "Dpkg::Options::=--force-confold"}
	for _, e := range extra {
		args = append(args, "-o", e)
	}
	return append(args, "--", pkg)
}

// Install upgrades req.Package. A package whose installed version is the
// requested one, or that has no upgrade, is already installed.
func (a *AptInstaller) Install(ctx context.Context, req proto.PatchInstallRequest, progress func(Progress)) (proto.PatchInstallResult, error) {
	if req.Package == "" {
		return proto.PatchInstallResult{}, ErrNoPackage
	}
	progress(Progress{Phase: proto.PatchPhaseStarting, Message: "checking " + req.Package})
	current, err := a.installedVersion(ctx, req.Package)
	if err != nil {
		return proto.PatchInstallResult{}, err
	}
	if current == "" {
		return proto.PatchInstallResult{Status: proto.PatchInstallFailed, Message: req.Package + " is not installed"}, nil
	}
	if req.Version != "" && current == req.Version {
		return a.already(req.Package, current), nil
	}
	// Whether apt has an upgrade at all (simulated: no lock, no change).
	sim, _, err := command(ctx, nil, cmpOr(a.AptGet, "apt-get"), append([]string{"-s", "-o", "Debug::NoLocking=1"},
		AptInstallArgs(req.Package, a.Extra...)...)...)
	if err != nil {
		return proto.PatchInstallResult{}, err
	}
	if !hasUpgrade(sim, req.Package) {
		return a.already(req.Package, current), nil
	}
	code, out, err := runWithStatusFd(ctx, cmpOr(a.AptGet, "apt-get"), AptInstallArgs(req.Package, a.Extra...),
		[]string{"DEBIAN_FRONTEND=noninteractive", "APT_LISTCHANGES_FRONTEND=none"}, func(line string) {
			if p, ok := ParseAptStatus(line); ok {
				progress(p)
			}
		})
	if err != nil {
		return proto.PatchInstallResult{}, err
	}
	reboot, _ := RebootRequiredFile(cmpOr(a.RebootFile, "/var/run/reboot-required"))
	if code != 0 {
		return proto.PatchInstallResult{Status: proto.PatchInstallFailed, ExitCode: &code, RebootRequired: reboot,
			Message: "apt-get exited " + strconv.Itoa(code) + ": " + firstError(out), LogExcerpt: Excerpt(out)}, nil
	}
	after, err := a.installedVersion(ctx, req.Package)
	if err != nil {
		return proto.PatchInstallResult{}, err
	}
	progress(Progress{Phase: proto.PatchPhaseFinished, Percent: 100, Message: req.Package + " " + after})
	return proto.PatchInstallResult{Status: proto.PatchInstallDone, ExitCode: &code, RebootRequired: reboot,
		Message: req.Package + " " + current + " -> " + after}, nil
}

func (a *AptInstaller) already(pkg, version string) proto.PatchInstallResult {
	reboot, _ := RebootRequiredFile(cmpOr(a.RebootFile, "/var/run/reboot-required"))
	return proto.PatchInstallResult{Status: proto.PatchInstallAlready, AlreadyInstalled: true, RebootRequired: reboot,
		Message: pkg + " " + version + " is installed and has no upgrade"}
}

// installedVersion is dpkg's installed version of pkg ("" when it is not
// installed).
func (a *AptInstaller) installedVersion(ctx context.Context, pkg string) (string, error) {
	args := []string{"-W", "-f", "${db:Status-Status} ${Version}"}
	if a.AdminDir != "" {
		args = append(args, "--admindir="+a.AdminDir)
	}
	out, code, err := command(ctx, []int{1}, cmpOr(a.DpkgQuery, "dpkg-query"), append(args, "--", pkg)...)
	if err != nil {
		return "", err
	}
	status, version, _ := strings.Cut(strings.TrimSpace(out), " ")
	if code != 0 || status != "installed" {
		return "", nil
	}
	return version, nil
}

// hasUpgrade says whether a simulated install upgrades pkg.
func hasUpgrade(sim, pkg string) bool {
	for _, r := range ParseAptSimulate(sim) {
		if r.Package == pkg || strings.HasPrefix(r.Package, pkg+":") {
			return true
		}
	}
	return false
}

// ParseAptStatus reads one APT::Status-Fd line:
//
//	dlstatus:1:9.0909:Retrieving file 1 of 11
//	pmstatus:bash:42.8571:Unpacking bash (amd64)
//	pmerror:/var/cache/apt/archives/x.deb:50:trying to overwrite ...
func ParseAptStatus(line string) (Progress, bool) {
	f := strings.SplitN(strings.TrimRight(line, "\r\n"), ":", 4)
	if len(f) != 4 {
		return Progress{}, false
	}
	pct, err := strconv.ParseFloat(f[2], 64)
	if err != nil {
		return Progress{}, false
	}
	p := Progress{Percent: max(0, min(100, int(pct))), Message: f[3]}
	switch f[0] {
	case "dlstatus":
		p.Phase = proto.PatchPhaseDownloading
	case "pmstatus":
		p.Phase = proto.PatchPhaseInstalling
	case "pmerror", "pmconffile":
		p.Phase, p.Message = proto.PatchPhaseInstalling, f[0]+": "+f[3]
	default:
		return Progress{}, false
	}
	return p, true
}

// Excerpt is the end of a tool's output, at most proto.MaxPatchLogExcerpt
// bytes, cut at a line start.
func Excerpt(out string) string {
	if len(out) <= proto.MaxPatchLogExcerpt {
		return out
	}
	tail := out[len(out)-proto.MaxPatchLogExcerpt:]
	if i := strings.IndexByte(tail, '\n'); i >= 0 && i < len(tail)-1 {
		tail = tail[i+1:]
	}
	return tail
}

// runWithStatusFd runs a tool with a pipe as file descriptor 3, calling
// status for each line written there, and returns the exit code and its
// combined stdout and stderr.
func runWithStatusFd(ctx context.Context, name string, args, env []string, status func(string)) (int, string, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return -1, "", err
	}
	defer r.Close()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = append(append(os.Environ(), "LC_ALL=C", "LANG=C", "LANGUAGE="), env...)
	var out lockedBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.ExtraFiles = []*os.File{w}
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		w.Close()
		return -1, "", fmt.Errorf("%s: %w", name, err)
	}
	w.Close()
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			status(sc.Text())
		}
		_, _ = io.Copy(io.Discard, r)
	}()
	err = cmd.Wait()
	<-done
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0, out.String(), nil
	case ctx.Err() != nil:
		return -1, out.String(), fmt.Errorf("%s: %w", name, ctx.Err())
	case errors.As(err, &exit):
		return exit.ExitCode(), out.String(), nil
	}
	return -1, out.String(), fmt.Errorf("%s: %w", name, err)
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// DnfInstaller upgrades one package with dnf. dnf has no machine-readable
// progress: the phases are reported as they begin. Zero fields take the
// system's tools (tests point them at fakes).
type DnfInstaller struct {
	Dnf string // dnf
	Rpm string // rpm
	// NeedsRestarting is needs-restarting (dnf-utils); empty: the one on
	// PATH, else `dnf needs-restarting`.
	NeedsRestarting string
}

// DnfInstallArgs are dnf's arguments for upgrading pkg: non-interactive,
// the named package only (never an install of a package that is not
// there: dnf upgrade only upgrades).
func DnfInstallArgs(pkg string) []string {
	return []string{"-y", "-q", "upgrade", "--", pkg}
}

// Install upgrades req.Package. A package that is not installed fails
// (an upgrade installs nothing new); one dnf's cache offers no upgrade
// for (check-update exit 0) is already installed.
func (d *DnfInstaller) Install(ctx context.Context, req proto.PatchInstallRequest, progress func(Progress)) (proto.PatchInstallResult, error) {
	if req.Package == "" {
		return proto.PatchInstallResult{}, ErrNoPackage
	}
	dnf := cmpOr(d.Dnf, "dnf")
	progress(Progress{Phase: proto.PatchPhaseStarting, Message: "checking " + req.Package})
	before, err := d.installedVersion(ctx, req.Package)
	if err != nil {
		return proto.PatchInstallResult{}, err
	}
	if before == "" {
		return proto.PatchInstallResult{Status: proto.PatchInstallFailed, Message: req.Package + " is not installed"}, nil
	}
	_, code, err := command(ctx, []int{100}, dnf, "-q", "-C", "check-update", "--", req.Package)
	if err != nil {
		return proto.PatchInstallResult{}, err
	}
	if code == 0 {
		return proto.PatchInstallResult{Status: proto.PatchInstallAlready, AlreadyInstalled: true, RebootRequired: d.rebootRequired(ctx),
			Message: req.Package + " " + before + " is installed and has no upgrade"}, nil
	}
	progress(Progress{Phase: proto.PatchPhaseInstalling, Message: "dnf upgrade " + req.Package})
	exit, out, err := runWithStatusFd(ctx, dnf, DnfInstallArgs(req.Package), nil, func(string) {})
	if err != nil {
		return proto.PatchInstallResult{}, err
	}
	reboot := d.rebootRequired(ctx)
	if exit != 0 {
		return proto.PatchInstallResult{Status: proto.PatchInstallFailed, ExitCode: &exit, RebootRequired: reboot,
			Message: "dnf exited " + strconv.Itoa(exit) + ": " + firstError(out), LogExcerpt: Excerpt(out)}, nil
	}
	after, err := d.installedVersion(ctx, req.Package)
	if err != nil {
		return proto.PatchInstallResult{}, err
	}
	progress(Progress{Phase: proto.PatchPhaseFinished, Percent: 100, Message: req.Package + " " + after})
	return proto.PatchInstallResult{Status: proto.PatchInstallDone, ExitCode: &exit, RebootRequired: reboot,
		Message: req.Package + " " + before + " -> " + after}, nil
}

// installedVersion is rpm's installed version of pkg ("" when it is not
// installed; several installed versions, a kernel's, are the newest).
func (d *DnfInstaller) installedVersion(ctx context.Context, pkg string) (string, error) {
	out, code, err := command(ctx, []int{1}, cmpOr(d.Rpm, "rpm"), "-q", "--qf", "%{EPOCH}:%{VERSION}-%{RELEASE}\n", "--", pkg)
	if err != nil {
		return "", err
	}
	if code != 0 {
		return "", nil
	}
	lines := strings.Fields(out)
	if len(lines) == 0 {
		return "", nil
	}
	return strings.TrimPrefix(lines[len(lines)-1], "(none):"), nil
}

// rebootRequired asks needs-restarting -r (exit 1: a reboot is needed);
// without the tool there is no answer: false.
func (d *DnfInstaller) rebootRequired(ctx context.Context) bool {
	if d.NeedsRestarting == "" {
		need, _ := dnfNeedsReboot(ctx)
		return need
	}
	_, code, err := command(ctx, []int{1}, d.NeedsRestarting, "-r")
	return err == nil && code == 1
}
