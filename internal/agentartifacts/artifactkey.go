package agentartifacts

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/cairn-rmm/cairn/agent/proto"
)

// The artifact key signs agent artifacts and nothing else (issue 21 item
// 4): agents verify updates with it and never with the script key, so an
// Engine replica or a database that can make script payloads still cannot
// replace an agent. It lives outside PostgreSQL, in a file, and can be
// kept off the Engine entirely: set EnvArtifactPublicKey, sign each build
// on another machine with `cairn sign-artifact`, and copy the .sig file
// next to the binary (docs/agent.md "Signing chain").

// Environment variables of the artifact key.
const (
	// EnvArtifactKeyFile names the private key file the Engine signs
	// artifacts with (default <data dir>/artifact-signing.key, made on
	// first start).
	EnvArtifactKeyFile = "CAIRN_ARTIFACT_KEY_FILE"
	// EnvArtifactPublicKey is the artifact public key (standard base64)
	// when its private half is kept offline: the Engine then serves only
	// signatures from .sig files and never signs.
	EnvArtifactPublicKey = "CAIRN_ARTIFACT_PUBLIC_KEY"
)

// SignatureSuffix names the sidecar file holding an artifact signature
// made elsewhere (JSON proto.Signed over proto.UpdateArtifact).
const SignatureSuffix = ".sig"

// BuildSeqSuffix names the sidecar file holding a binary's build sequence.
const BuildSeqSuffix = ".build-seq"

// ArtifactKey is the artifact key as the Engine holds it: the public half
// always, the private half only when the Engine signs.
type ArtifactKey struct {
	Public ed25519.PublicKey
	priv   ed25519.PrivateKey
}

// Offline reports whether the Engine holds only the public half.
func (k *ArtifactKey) Offline() bool { return k.priv == nil }

// PublicBase64 is the public key as agents pin it.
func (k *ArtifactKey) PublicBase64() string { return base64.StdEncoding.EncodeToString(k.Public) }

// OfflineKey is an artifact key whose private half the Engine does not
// have.
func OfflineKey(publicBase64 string) (*ArtifactKey, error) {
	b, err := base64.StdEncoding.DecodeString(strings.TrimSpace(publicBase64))
	if err != nil || len(b) != ed25519.PublicKeySize {
		return nil, fmt.Errorf("%s: must be a base64 Ed25519 public key", EnvArtifactPublicKey)
	}
	return &ArtifactKey{Public: ed25519.PublicKey(b)}, nil
}

// GenerateKeyFile writes a new artifact key to path (the standard base64
// of its 32-byte seed, mode 0600) and refuses to overwrite a file.
func GenerateKeyFile(path string) (*ArtifactKey, error) {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, err
	}
	_, err = f.WriteString(base64.StdEncoding.EncodeToString(priv.Seed()) + "\n")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, err
	}
	return &ArtifactKey{Public: priv.Public().(ed25519.PublicKey), priv: priv}, nil
}

// LoadKeyFile reads an artifact key file.
func LoadKeyFile(path string) (*ArtifactKey, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	seed, err := base64.StdEncoding.DecodeString(strings.TrimSpace(string(raw)))
	if err != nil || len(seed) != ed25519.SeedSize {
		return nil, fmt.Errorf("%s: not an artifact key file (base64 of a 32-byte Ed25519 seed)", path)
	}
	priv := ed25519.NewKeyFromSeed(seed)
	return &ArtifactKey{Public: priv.Public().(ed25519.PublicKey), priv: priv}, nil
}

// LoadOrCreateKeyFile reads path, making a new key there when it does not
// exist.
func LoadOrCreateKeyFile(path string) (*ArtifactKey, error) {
	k, err := LoadKeyFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return GenerateKeyFile(path)
	}
	return k, err
}

// Sign signs art with the private half (purpose set here).
func (k *ArtifactKey) Sign(art proto.UpdateArtifact) (proto.Signed, error) {
	if k.priv == nil {
		return proto.Signed{}, errors.New("the artifact key is kept offline: sign with `cairn sign-artifact`")
	}
	art.Purpose = proto.PurposeArtifact
	raw, err := json.Marshal(art)
	if err != nil {
		return proto.Signed{}, err
	}
	return proto.Signed{Payload: raw, KeyID: proto.KeyID(k.Public), Signature: ed25519.Sign(k.priv, raw)}, nil
}

// verifyFor checks that sg is this key's signature over the artifact a
// (its identity, platform, build and content) and returns what it signs.
func (k *ArtifactKey) verifyFor(sg proto.Signed, a Artifact) (proto.UpdateArtifact, error) {
	var art proto.UpdateArtifact
	if _, err := sg.Verify([]string{k.PublicBase64()}); err != nil {
		return art, errors.New("the signature does not verify with the artifact key")
	}
	if err := json.Unmarshal(sg.Payload, &art); err != nil {
		return art, err
	}
	if art.Purpose != proto.PurposeArtifact || art.ArtifactID != a.ID || art.Platform != a.Platform || art.BuildID != a.BuildID ||
		art.SHA256 != a.SHA256 || art.Size != a.Size {
		return art, errors.New("the signature is for another artifact (rebuilt since it was signed?)")
	}
	return art, nil
}

// UpdateArtifactOf is what the artifact key signs for a (rollback false).
func UpdateArtifactOf(a Artifact) proto.UpdateArtifact {
	return proto.UpdateArtifact{Purpose: proto.PurposeArtifact, ArtifactID: a.ID, Platform: a.Platform, BuildID: a.BuildID,
		SHA256: a.SHA256, Size: a.Size, BuildSeq: a.BuildSeq}
}

// Describe reads a binary as the catalog would (ID, SHA-256, size, build
// ID and sequence from its sidecars): what `cairn sign-artifact` signs.
func Describe(platform, path string) (Artifact, error) {
	if !platformPattern.MatchString(platform) {
		return Artifact{}, fmt.Errorf("platform %q: must look like linux-amd64", platform)
	}
	info, err := os.Stat(path)
	if err != nil {
		return Artifact{}, err
	}
	return load(platform, path, info)
}
