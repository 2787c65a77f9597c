// Package agentartifacts is the Engine's catalog of agent binaries: one
// current artifact per platform, read from a directory that `make build`
// fills (bin/agents/<platform>/cairn-agent[.exe] with a <binary>.build-id
// sidecar), each known by its SHA-256, an ID derived from it and the build
// ID the binary reports. The agent update routes and the signed install
// links serve these files; the manifest signature is computed once by a
// process with an unlocked master cipher and kept in PostgreSQL.
package agentartifacts

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/db"
)

// ECodeUnavailable: no artifact for the platform, or the artifact ID is
// not (or no longer) the current one.
const ECodeUnavailable = "artifact_unavailable"

// Platforms the Engine builds agents for (make build), in display order.
var Platforms = []string{"linux-amd64", "windows-amd64"}

// EnvDir names the artifact directory; Engine processes default to
// "agents" next to the cairn binary (bin/agents for `make build`).
const EnvDir = "CAIRN_AGENT_ARTIFACTS"

// BuildIDSuffix names the sidecar file holding a binary's build ID.
const BuildIDSuffix = ".build-id"

// idHexLen is how much of the SHA-256 an artifact ID carries.
const idHexLen = 16

var (
	platformPattern = regexp.MustCompile(`^[a-z0-9]+-[a-z0-9]+$`)
	buildIDPattern  = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._+-]{0,127}$`)
)

// Artifact is one agent binary.
type Artifact struct {
	// ID is "<platform>-<first 16 hex digits of SHA256>".
	ID       string
	Platform string
	BuildID  string
	SHA256   string
	Size     int64
	// Signature is the manifest signature (proto.Signed over
	// ManifestPayload), empty until a process with an unlocked cipher
	// signed it; Signer.Signed fills it.
	Signature proto.Signed
	// BuildSeq orders builds (the .build-seq sidecar, or what a .sig
	// file signed); agents refuse a lower one unless it is a rollback.
	BuildSeq int64
	// ArtifactSignature is the artifact key's signature
	// (proto.UpdateArtifact), from the .sig sidecar or made by the
	// Engine's artifact key; nil when neither is there (an offline key
	// and no .sig yet): agents of protocol 3 then refuse the artifact.
	ArtifactSignature *proto.Signed
	// FileName is what a download is offered as (cairn-agent, cairn-agent.exe).
	FileName string
	ModTime  time.Time

	path   string
	sigMod time.Time // the .sig file's time when it was read
}

// ValidPlatform reports whether p names a platform the Engine serves.
func ValidPlatform(p string) bool { return slices.Contains(Platforms, p) }

// BinaryName is the agent's file name on a platform.
func BinaryName(platform string) string {
	if strings.HasPrefix(platform, "windows-") {
		return "cairn-agent.exe"
	}
	return "cairn-agent"
}

// ArtifactID derives an artifact's ID from its platform and hex SHA-256.
func ArtifactID(platform, sha256Hex string) string {
	return platform + "-" + sha256Hex[:idHexLen]
}

// Unavailable is the error for a platform or ID without an artifact.
func Unavailable(format string, args ...any) error {
	return cairn.Errorf(ECodeUnavailable, format, args...)
}

// Catalog is the current artifact per platform, loaded from Dir. It looks
// at the directory again on each use (a directory listing and a stat per
// platform) and hashes a binary again only when its size or time changed,
// so a `make build` under a running Engine is served from then on.
type Catalog struct {
	dir    string
	log    *slog.Logger
	store  *db.Store
	signer Signer
	key    *ArtifactKey

	mu        sync.Mutex
	artifacts map[string]Artifact // by platform
	signed    map[string]proto.Signed
}

// Options are a catalog's dependencies.
type Options struct {
	// Store keeps the manifest signatures (agent_artifacts).
	Store *db.Store
	// Signer signs manifests (nil: only stored signatures are served).
	Signer Signer
	// ArtifactKey signs artifacts for agents of protocol 3 (nil: none
	// is signed).
	ArtifactKey *ArtifactKey
	Log         *slog.Logger
}

// New reads the artifacts in dir ("" or a missing directory: an empty
// catalog that answers artifact_unavailable). A platform whose binary
// cannot be read is left out and logged.
func New(dir string, o Options) *Catalog {
	log := o.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	c := &Catalog{dir: dir, log: log, store: o.Store, signer: o.Signer, key: o.ArtifactKey, artifacts: map[string]Artifact{}, signed: map[string]proto.Signed{}}
	c.mu.Lock()
	c.refreshLocked()
	c.mu.Unlock()
	return c
}

// Dir is the directory the catalog reads.
func (c *Catalog) Dir() string { return c.dir }

// refreshLocked brings the catalog in line with the directory.
func (c *Catalog) refreshLocked() {
	seen := map[string]bool{}
	if c.dir != "" {
		entries, err := os.ReadDir(c.dir)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			c.log.Warn("agent artifacts: read directory", "dir", c.dir, "err", err)
		}
		for _, e := range entries {
			platform := e.Name()
			if !e.IsDir() || !platformPattern.MatchString(platform) {
				continue
			}
			path := filepath.Join(c.dir, platform, BinaryName(platform))
			info, err := os.Stat(path)
			if err != nil || !info.Mode().IsRegular() || info.Size() == 0 {
				continue
			}
			seen[platform] = true
			if old, ok := c.artifacts[platform]; ok && old.Size == info.Size() && old.ModTime.Equal(info.ModTime()) &&
				old.BuildID == readBuildID(path) && old.sigMod.Equal(modTime(path+SignatureSuffix)) {
				continue
			}
			a, err := load(platform, path, info)
			if err != nil {
				c.log.Warn("agent artifacts: skipping a binary", "path", path, "err", err)
				delete(seen, platform)
				continue
			}
			c.signArtifact(&a)
			c.artifacts[platform] = a
			c.log.Info("agent artifact", "id", a.ID, "build_id", a.BuildID, "size", a.Size, "path", path)
		}
	}
	for p := range c.artifacts {
		if !seen[p] {
			delete(c.artifacts, p)
		}
	}
}

// load hashes one binary and reads its build ID.
func load(platform, path string, info os.FileInfo) (Artifact, error) {
	sum, err := proto.FileSHA256(path)
	if err != nil {
		return Artifact{}, err
	}
	a := Artifact{ID: ArtifactID(platform, sum), Platform: platform, SHA256: sum, Size: info.Size(),
		FileName: BinaryName(platform), ModTime: info.ModTime(), path: path}
	a.BuildID = readBuildID(path)
	a.BuildSeq = readBuildSeq(path)
	if a.BuildID == "" {
		// Built without make: the same ID the binary derives for itself.
		a.BuildID = proto.DevBuildID(sum)
	}
	return a, nil
}

// readBuildID is the sidecar's build ID, "" when there is none or it is
// not a plain ID.
func readBuildID(path string) string {
	b, err := os.ReadFile(path + BuildIDSuffix)
	if err != nil {
		return ""
	}
	id := strings.TrimSpace(string(b))
	if !buildIDPattern.MatchString(id) {
		return ""
	}
	return id
}

// readBuildSeq is the .build-seq sidecar's number, 0 when absent.
func readBuildSeq(path string) int64 {
	b, err := os.ReadFile(path + BuildSeqSuffix)
	if err != nil {
		return 0
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil || n < 0 {
		return 0
	}
	return n
}

func modTime(path string) time.Time {
	info, err := os.Stat(path)
	if err != nil {
		return time.Time{}
	}
	return info.ModTime()
}

// signArtifact gives a its artifact-key signature: the .sig sidecar's
// when it verifies for this binary (its build sequence and rollback flag
// are the signer's), else one made with the Engine's key; none with an
// offline key and no valid .sig file.
func (c *Catalog) signArtifact(a *Artifact) {
	if c.key == nil {
		return
	}
	a.sigMod = modTime(a.path + SignatureSuffix)
	if raw, err := os.ReadFile(a.path + SignatureSuffix); err == nil {
		var sg proto.Signed
		art, verr := proto.UpdateArtifact{}, json.Unmarshal(raw, &sg)
		if verr == nil {
			art, verr = c.key.verifyFor(sg, *a)
		}
		if verr == nil {
			a.ArtifactSignature, a.BuildSeq = &sg, art.BuildSeq
			return
		}
		c.log.Warn("agent artifacts: ignoring a signature file", "path", a.path+SignatureSuffix, "err", verr)
	}
	if c.key.Offline() {
		c.log.Warn("agent artifacts: no artifact signature (the key is offline: run cairn sign-artifact)", "path", a.path)
		return
	}
	sg, err := c.key.Sign(UpdateArtifactOf(*a))
	if err != nil {
		c.log.Warn("agent artifacts: sign", "path", a.path, "err", err)
		return
	}
	a.ArtifactSignature = &sg
}

// List is every current artifact, in platform order.
func (c *Catalog) List() []Artifact {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.refreshLocked()
	out := make([]Artifact, 0, len(c.artifacts))
	for _, a := range c.artifacts {
		out = append(out, c.withSignature(a))
	}
	slices.SortFunc(out, func(a, b Artifact) int { return strings.Compare(a.Platform, b.Platform) })
	return out
}

// Current is the platform's artifact.
func (c *Catalog) Current(platform string) (Artifact, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.refreshLocked()
	a, ok := c.artifacts[platform]
	if !ok {
		return Artifact{}, Unavailable("this Engine has no agent build for %s", platform)
	}
	return c.withSignature(a), nil
}

// Open opens the artifact with this ID for reading. Only current
// artifacts open: an ID from before a rebuild answers artifact_unavailable.
func (c *Catalog) Open(id string) (io.ReadSeekCloser, Artifact, error) {
	c.mu.Lock()
	c.refreshLocked()
	var found *Artifact
	for _, a := range c.artifacts {
		if a.ID == id {
			a := c.withSignature(a)
			found = &a
		}
	}
	c.mu.Unlock()
	if found == nil {
		return nil, Artifact{}, Unavailable("agent artifact %q is not available", id)
	}
	f, err := os.Open(found.path)
	if err != nil {
		return nil, Artifact{}, fmt.Errorf("agentartifacts: open %s: %w", found.path, err)
	}
	// The file changed between the refresh and the open (a build in
	// progress): refuse rather than serve bytes that do not match the ID.
	if info, err := f.Stat(); err != nil || info.Size() != found.Size || !info.ModTime().Equal(found.ModTime) {
		f.Close()
		return nil, Artifact{}, Unavailable("agent artifact %q is being replaced; try again", id)
	}
	return f, *found, nil
}

func (c *Catalog) withSignature(a Artifact) Artifact {
	a.Signature = c.signed[a.ID]
	return a
}

// setSignature keeps an artifact's signature in memory.
func (c *Catalog) setSignature(id string, s proto.Signed) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.signed[id] = s
}

// PlatformOf maps what a device reported (inventory OS family and
// architecture, or only its operating system's name) to a platform name;
// "" when it cannot tell.
func PlatformOf(family, arch, osName string) string {
	family = strings.ToLower(family)
	if family == "" {
		switch n := strings.ToLower(osName); {
		case strings.Contains(n, "windows"):
			family = "windows"
		case n != "":
			family = "linux"
		}
	}
	if family != "linux" && family != "windows" {
		return ""
	}
	switch strings.ToLower(arch) {
	case "", "x86_64", "amd64", "x64":
		return family + "-amd64"
	case "aarch64", "arm64":
		return family + "-arm64"
	}
	return ""
}
