// Package agent is the endpoint agent's runtime. This file owns agent.json:
// its format, validation, schema migration and the locked, atomic update
// path every agent command writes through (docs/agent.md describes the file).
package agent

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/cairn-rmm/cairn/agent/proto"
)

// SchemaVersion is the agent.json format this build reads and writes. Every
// change to the format bumps it: an older file is migrated on load, a newer
// one is refused because rewriting it would silently drop what this build
// does not understand.
const SchemaVersion = 3

// FileName is the config file's base name; temp and lock files derive from it.
const FileName = "agent.json"

// ErrNewerSchema is wrapped by Load when the file was written by a newer agent.
var ErrNewerSchema = errors.New("agent.json was written by a newer agent")

// Config is agent.json. Field and JSON names follow SPEC "Agent-side
// behavior" item 15.
type Config struct {
	SchemaVersion    int    `json:"schema_version"`
	ServerURL        string `json:"server_url"`
	ServerIPFallback string `json:"server_ip_fallback,omitempty"`
	EnrollmentCode   string `json:"enrollment_code"`
	Agent            Agent  `json:"agent"`
	// Ed25519PrivateKey is the standard base64 of the 64-byte private key;
	// the public key is derived from it, never stored separately, so the two
	// cannot disagree.
	Ed25519PrivateKey string `json:"ed25519_private_key"`
	AccessToken       string `json:"access_token,omitempty"`
	RefreshToken      string `json:"refresh_token,omitempty"`
	// CloneTicket is the one-time ticket of a device_cloned answer: this
	// agent turned out to be a copy of an enrolled device, made a new key
	// and enrolls with the ticket (identity.go). Cleared once enrolled.
	CloneTicket string `json:"clone_ticket,omitempty"`
	// Generalized: the identity was cleared for a disk image (cairn-agent
	// generalize); writes leave the key absent until the agent makes its
	// own on the machine built from the image.
	Generalized   bool   `json:"generalized,omitempty"`
	InternalCAPEM string `json:"internal_ca_pem,omitempty"`
	// TrustPublicCAs also accepts a certificate from a public CA of the
	// system when InternalCAPEM pins the Engine's CA (off: pinned only).
	TrustPublicCAs bool          `json:"trust_public_cas,omitempty"`
	ScriptSigning  ScriptSigning `json:"script_signing"`
	Metadata       Metadata      `json:"metadata"`
	// RolesStopped names the roles an operator stopped (role_desired_state),
	// so they stay stopped across restarts; every other role runs.
	RolesStopped []string `json:"roles_stopped,omitempty"`
}

// Agent is the "agent" object: identity and runtime state.
type Agent struct {
	GUID             string `json:"guid"`
	AgentID          string `json:"agent_id"`
	InstalledBuildID string `json:"installed_build_id"`
	LogRetentionDays int    `json:"log_retention_days"`
	State            State  `json:"state"`
	// Liveness, DependencyState and Route belong to the run loop (not built
	// yet); this build keeps them verbatim so a metadata write never drops them.
	Liveness        json.RawMessage `json:"liveness,omitempty"`
	DependencyState json.RawMessage `json:"dependency_state,omitempty"`
	// Route is the cached remote-ops route (site worker, realtime address);
	// a re-deploy with a new enrollment code clears it.
	Route json.RawMessage `json:"route,omitempty"`
}

// State records the last write, so a reader can tell who changed the file.
type State struct {
	Revision    int64     `json:"revision"`
	Writer      string    `json:"writer"`
	LastWriteAt time.Time `json:"last_write_at"`
}

// ScriptSigning is the trust material for signed payloads: the script
// keys (scripts and key lists) and the artifact keys (agent updates), each
// with the sequence number of the last chain link accepted (0: the lists
// pinned at enrollment).
type ScriptSigning struct {
	// TrustedPublicKeys are standard-base64 Ed25519 public keys (32 bytes).
	TrustedPublicKeys []string `json:"trusted_public_keys"`
	Seq               int64    `json:"seq,omitempty"`
	// ArtifactPublicKeys verify agent update manifests, and nothing else.
	ArtifactPublicKeys []string `json:"artifact_public_keys,omitempty"`
	ArtifactSeq        int64    `json:"artifact_seq,omitempty"`
}

// Default returns a new, unenrolled config at the current schema version.
func Default() *Config {
	return &Config{
		SchemaVersion: SchemaVersion,
		Agent:         Agent{LogRetentionDays: 14},
		ScriptSigning: ScriptSigning{TrustedPublicKeys: []string{}},
		Metadata:      Metadata{Queued: []MetadataEntry{}, Acknowledged: map[string]MetadataValue{}},
	}
}

// Validate reports the first problem with c, naming the JSON field.
func (c *Config) Validate() error {
	if c.ServerURL != "" {
		u, err := url.Parse(c.ServerURL)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			return fmt.Errorf("server_url %q: must be an absolute http(s) URL", c.ServerURL)
		}
	}
	if p := IPFallbackProblem(c.ServerIPFallback); p != "" {
		return fmt.Errorf("server_ip_fallback %q: %s", c.ServerIPFallback, p)
	}
	if c.Agent.LogRetentionDays < 0 {
		return fmt.Errorf("agent.log_retention_days: must not be negative")
	}
	if c.Ed25519PrivateKey != "" {
		if _, err := c.PrivateKey(); err != nil {
			return err
		}
	}
	for i, k := range c.ScriptSigning.TrustedPublicKeys {
		b, err := base64.StdEncoding.DecodeString(k)
		if err != nil || len(b) != ed25519.PublicKeySize {
			return fmt.Errorf("script_signing.trusted_public_keys[%d]: must be a base64 Ed25519 public key", i)
		}
	}
	for i, k := range c.ScriptSigning.ArtifactPublicKeys {
		b, err := base64.StdEncoding.DecodeString(k)
		if err != nil || len(b) != ed25519.PublicKeySize {
			return fmt.Errorf("script_signing.artifact_public_keys[%d]: must be a base64 Ed25519 public key", i)
		}
	}
	return c.Metadata.validate()
}

// IPFallbackProblem returns "" for an acceptable server_ip_fallback (empty or
// a bare IP) and a short reason otherwise. Bare means no port, brackets or
// zone: the dialer adds the Engine's port and keeps the FQDN for TLS.
func IPFallbackProblem(s string) string {
	if s == "" {
		return ""
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return "must be a bare IP address (no port, brackets or host name)"
	}
	if a.Zone() != "" {
		return "must not carry an IPv6 zone"
	}
	if a.IsUnspecified() {
		return "must not be the unspecified address"
	}
	return ""
}

// PrivateKey decodes the stored Ed25519 private key.
func (c *Config) PrivateKey() (ed25519.PrivateKey, error) {
	b, err := base64.StdEncoding.DecodeString(c.Ed25519PrivateKey)
	if err != nil || len(b) != ed25519.PrivateKeySize {
		return nil, errors.New("ed25519_private_key: must be the base64 of a 64-byte Ed25519 private key")
	}
	return ed25519.PrivateKey(b), nil
}

// EnsureKey generates the device key pair when none is stored; it reports
// whether it made one.
func (c *Config) EnsureKey() (bool, error) {
	if c.Ed25519PrivateKey != "" {
		return false, nil
	}
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return false, fmt.Errorf("generate Ed25519 key: %w", err)
	}
	c.Ed25519PrivateKey = base64.StdEncoding.EncodeToString(priv)
	return true, nil
}

// Parse decodes agent.json bytes, migrating an older schema and refusing a
// newer one. Unknown fields are refused: every format change bumps the
// version, so an unknown field is a typo in a hand edit.
func Parse(data []byte) (*Config, error) {
	var head struct {
		SchemaVersion *int `json:"schema_version"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		return nil, fmt.Errorf("agent.json is not valid JSON: %w", err)
	}
	version := 0 // files written before schema_version existed
	if head.SchemaVersion != nil {
		version = *head.SchemaVersion
	}
	switch {
	case version > SchemaVersion:
		return nil, fmt.Errorf("%w: schema_version %d, this agent understands up to %d; install a newer agent",
			ErrNewerSchema, version, SchemaVersion)
	case version < 0:
		return nil, fmt.Errorf("agent.json schema_version %d is invalid", version)
	case version < SchemaVersion:
		migrated, err := migrate(data, version)
		if err != nil {
			return nil, err
		}
		data = migrated
	}
	c := Default()
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(c); err != nil {
		return nil, fmt.Errorf("agent.json: %w", err)
	}
	c.normalize()
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("agent.json: %w", err)
	}
	return c, nil
}

// migrations[v] turns a version-v document into version v+1.
var migrations = []func(doc map[string]any) error{
	// 0 -> 1: unversioned files differ only by lacking schema_version.
	func(doc map[string]any) error { return nil },
	// 1 -> 2: clone_ticket and generalized (cloned agents, images) are new
	// optional fields; a version-1 file has neither. The bump makes an
	// older agent refuse a file with them as written by a newer agent,
	// instead of failing on an unknown field.
	func(doc map[string]any) error { return nil },
	// 2 -> 3: roles_stopped (roles stopped from the console) is a new
	// optional field; a version-2 file has none, so every role runs.
	func(doc map[string]any) error { return nil },
}

func migrate(data []byte, from int) ([]byte, error) {
	var doc map[string]any
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("agent.json is not a JSON object: %w", err)
	}
	for v := from; v < SchemaVersion; v++ {
		if err := migrations[v](doc); err != nil {
			return nil, fmt.Errorf("migrate agent.json from schema_version %d: %w", v, err)
		}
	}
	doc["schema_version"] = SchemaVersion
	return json.Marshal(doc)
}

// normalize fills nil collections so the written file has a stable shape.
func (c *Config) normalize() {
	if c.ScriptSigning.TrustedPublicKeys == nil {
		c.ScriptSigning.TrustedPublicKeys = []string{}
	}
	if c.Metadata.Queued == nil {
		c.Metadata.Queued = []MetadataEntry{}
	}
	if c.Metadata.Acknowledged == nil {
		c.Metadata.Acknowledged = map[string]MetadataValue{}
	}
}

// Marshal encodes c in the canonical on-disk form (two-space indent, final
// newline).
func (c *Config) Marshal() ([]byte, error) {
	c.normalize()
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// Load reads and parses the config file without taking the lock: writes
// are atomic renames, so a reader always sees a whole file.
func Load(path string) (*Config, error) {
	data, err := readFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(data)
}

// Update is the only write path for an existing file: it takes the lock,
// reloads the file, applies fn, and writes the result atomically, so
// concurrent writers (goroutines or processes) never lose each other's
// changes. writer names the command ("run", "metadata", ...). When fn
// returns an error nothing is written.
func Update(path, writer string, fn func(*Config) error) (*Config, error) {
	// Checked before locking so a mistyped path does not leave a lock file.
	if _, err := os.Stat(path); err != nil {
		return nil, err
	}
	unlock, err := lock(path + ".lock")
	if err != nil {
		return nil, err
	}
	defer unlock()
	c, err := Load(path)
	if err != nil {
		return nil, err
	}
	if err := fn(c); err != nil {
		return nil, err
	}
	if err := c.write(path, writer, time.Now()); err != nil {
		return nil, err
	}
	return c, nil
}

// Create writes c as a new config file and fails if one exists (the
// installer's first write; later writes go through Update).
func Create(path, writer string, c *Config) error {
	unlock, err := lock(path + ".lock")
	if err != nil {
		return err
	}
	defer unlock()
	if _, err := os.Lstat(path); err == nil {
		return fmt.Errorf("%s already exists", path)
	} else if !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return c.write(path, writer, time.Now())
}

// write stamps the state and replaces path atomically: temp file in the same
// directory, fsync, rename, fsync the directory. The caller holds the lock.
func (c *Config) write(path, writer string, now time.Time) error {
	if strings.TrimSpace(writer) == "" {
		return errors.New("config write needs a writer name")
	}
	c.SchemaVersion = SchemaVersion
	if !c.Generalized {
		if _, err := c.EnsureKey(); err != nil {
			return err
		}
	}
	if err := c.Validate(); err != nil {
		return err
	}
	c.Agent.State.Revision++
	c.Agent.State.Writer = writer
	c.Agent.State.LastWriteAt = now.UTC()
	data, err := c.Marshal()
	if err != nil {
		return err
	}
	dir := filepath.Dir(path)
	// CreateTemp opens with mode 0600, which the file keeps after the rename.
	tmp, err := os.CreateTemp(dir, filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	committed := false
	defer func() {
		if !committed {
			_ = tmp.Close()
			_ = os.Remove(tmp.Name())
		}
	}()
	if _, err := tmp.Write(data); err != nil {
		return err
	}
	if err := tmp.Sync(); err != nil {
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := replaceFile(tmp.Name(), path); err != nil {
		return err
	}
	committed = true
	return syncDir(dir)
}

// StaleTempAge is how old a leftover temp file must be before it is removed
// (SPEC "Agent-side behavior" item 15).
const StaleTempAge = time.Hour

// CleanStaleTemps removes agent.json.tmp-* files in dir last modified more
// than an hour before now: leftovers of a write interrupted between temp
// write and rename. Younger ones may belong to a write in progress. It
// returns the names removed.
func CleanStaleTemps(dir string, now time.Time) ([]string, error) {
	matches, err := filepath.Glob(filepath.Join(dir, FileName+".tmp-*"))
	if err != nil {
		return nil, err
	}
	var removed []string
	var errs []error
	for _, m := range matches {
		info, err := os.Lstat(m)
		if err != nil {
			continue // removed by someone else meanwhile
		}
		if !info.Mode().IsRegular() || now.Sub(info.ModTime()) <= StaleTempAge {
			continue
		}
		if err := os.Remove(m); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
			continue
		}
		removed = append(removed, filepath.Base(m))
	}
	return removed, errors.Join(errs...)
}

// PinTrust stores the trust material of an enrollment answer: the
// script and artifact keys it names become the pinned keys (the one point
// where the agent takes keys on the Engine's word, over the TLS channel it
// verified), then its chains are followed. Lists with a malformed key are
// not pinned. It reports whether anything changed.
func (c *Config) PinTrust(t *proto.ScriptTrust) bool {
	if t == nil {
		return false
	}
	changed := false
	if validKeys(t.TrustedPublicKeys) && !slices.Equal(t.TrustedPublicKeys, c.ScriptSigning.TrustedPublicKeys) {
		c.ScriptSigning.TrustedPublicKeys, c.ScriptSigning.Seq, changed = slices.Clone(t.TrustedPublicKeys), 0, true
	}
	if validKeys(t.ArtifactPublicKeys) && !slices.Equal(t.ArtifactPublicKeys, c.ScriptSigning.ArtifactPublicKeys) {
		c.ScriptSigning.ArtifactPublicKeys, c.ScriptSigning.ArtifactSeq, changed = slices.Clone(t.ArtifactPublicKeys), 0, true
	}
	return c.ApplyTrust(t) || changed
}

// ApplyTrust follows the chains of a heartbeat or refresh answer: a new
// script-key list is taken only when signed by a script key the agent
// trusts, a new artifact-key list only when signed by an artifact key it
// trusts (or, while it has none, by a trusted script key). The bare lists
// of the answer are ignored: a database row or an Engine replica cannot
// hand the agent a key it did not already trust a signer of. It reports
// whether anything changed.
func (c *Config) ApplyTrust(t *proto.ScriptTrust) bool {
	if t == nil {
		return false
	}
	ss := &c.ScriptSigning
	keys, seq, changedScript := proto.WalkChain(proto.PurposeScriptKeys, ss.TrustedPublicKeys, ss.Seq, t.Chain, nil)
	if changedScript {
		ss.TrustedPublicKeys, ss.Seq = keys, seq
	}
	akeys, aseq, changedArtifact := proto.WalkChain(proto.PurposeArtifactKeys, ss.ArtifactPublicKeys, ss.ArtifactSeq,
		t.ArtifactChain, ss.TrustedPublicKeys)
	if changedArtifact {
		ss.ArtifactPublicKeys, ss.ArtifactSeq = akeys, aseq
	}
	return changedScript || changedArtifact
}

func validKeys(keys []string) bool {
	if len(keys) == 0 {
		return false
	}
	for _, k := range keys {
		if b, err := base64.StdEncoding.DecodeString(k); err != nil || len(b) != ed25519.PublicKeySize {
			return false
		}
	}
	return true
}

// TrustedScriptKeyIDs are the key IDs (proto.KeyID) of the trusted keys,
// reported in heartbeats.
func (c *Config) TrustedScriptKeyIDs() []string {
	out := make([]string, 0, len(c.ScriptSigning.TrustedPublicKeys))
	for _, k := range c.ScriptSigning.TrustedPublicKeys {
		if b, err := base64.StdEncoding.DecodeString(k); err == nil && len(b) == ed25519.PublicKeySize {
			out = append(out, proto.KeyID(b))
		}
	}
	return out
}
