package agentartifacts

import (
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"errors"
	"slices"
	"time"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/db"
)

// ManifestPayload is what the legacy manifest signature signs: the
// proto.Signed payload is this JSON, signed by the script-signing key for
// agents of protocol 1 and 2, which verify updates with their script
// keys. Agents of protocol 3 ignore it and verify ArtifactSignature with
// the artifact key (artifactkey.go).
type ManifestPayload struct {
	ArtifactID string `json:"artifact_id"`
	Platform   string `json:"platform"`
	BuildID    string `json:"build_id"`
	SHA256     string `json:"sha256"`
	Size       int64  `json:"size"`
}

// Payload is the artifact's ManifestPayload as signed bytes.
func (a Artifact) Payload() []byte {
	b, err := json.Marshal(ManifestPayload{ArtifactID: a.ID, Platform: a.Platform, BuildID: a.BuildID, SHA256: a.SHA256, Size: a.Size})
	if err != nil {
		panic(err) // strings and an integer always encode
	}
	return b
}

// Signer signs manifests: the Engine's script-signing key
// (internal/scriptsign), whose private half only a process with an
// unlocked master cipher can use.
type Signer interface {
	Sign(ctx context.Context, payload []byte) (proto.Signed, error)
	// TrustedPublicKeys are the keys agents trust now (standard base64);
	// a stored signature by any other key is made again.
	TrustedPublicKeys(ctx context.Context) ([]string, error)
}

// SignedCurrent is the platform's artifact with its manifest signature:
// the stored one when a trusted key made it, else a new one made and
// stored now (aegis_locked when this process's cipher is locked and no
// replica has signed the artifact yet).
func (c *Catalog) SignedCurrent(ctx context.Context, platform string) (Artifact, error) {
	a, err := c.Current(platform)
	if err != nil {
		return Artifact{}, err
	}
	sg, err := c.sign(ctx, a)
	if err != nil {
		return Artifact{}, err
	}
	a.Signature = sg
	return a, nil
}

func (c *Catalog) sign(ctx context.Context, a Artifact) (proto.Signed, error) {
	if c.store == nil {
		return proto.Signed{}, errors.New("agentartifacts: the catalog has no store to keep signatures in")
	}
	row, err := c.store.AgentArtifactUpsert(ctx, db.AgentArtifactUpsertParams{ID: a.ID, Platform: a.Platform, BuildID: a.BuildID,
		Sha256: a.SHA256, Size: a.Size})
	if err != nil {
		return proto.Signed{}, err
	}
	if len(row.Signature) > 0 {
		var stored proto.Signed
		if err := json.Unmarshal(row.Signature, &stored); err == nil && c.stillTrusted(ctx, stored.KeyID) {
			c.setSignature(a.ID, stored)
			return stored, nil
		}
	}
	if c.signer == nil {
		return proto.Signed{}, cairn.Errorf(cairn.ECodeUnavailable, "this Engine cannot sign agent manifests")
	}
	sg, err := c.signer.Sign(ctx, a.Payload())
	if err != nil {
		return proto.Signed{}, err
	}
	raw, err := json.Marshal(sg)
	if err != nil {
		return proto.Signed{}, err
	}
	if err := c.store.AgentArtifactSetSignature(ctx, db.AgentArtifactSetSignatureParams{ID: a.ID, Signature: raw}); err != nil {
		return proto.Signed{}, err
	}
	c.setSignature(a.ID, sg)
	return sg, nil
}

// stillTrusted reports whether agents trust the key that made a stored
// signature (after two rotations they no longer do). Without a signer, or
// when the keys cannot be read, the stored signature stands.
func (c *Catalog) stillTrusted(ctx context.Context, keyID string) bool {
	if c.signer == nil {
		return true
	}
	keys, err := c.signer.TrustedPublicKeys(ctx)
	if err != nil {
		return true
	}
	return slices.ContainsFunc(keys, func(k string) bool {
		pub, err := base64.StdEncoding.DecodeString(k)
		return err == nil && len(pub) == ed25519.PublicKeySize && proto.KeyID(pub) == keyID
	})
}

// Run signs every current artifact that has no trusted stored signature,
// at start and then periodically (every 30 seconds while one could not be
// signed, e.g. the cipher is locked; every 10 minutes otherwise, which
// also picks up key rotations and rebuilt binaries), until ctx ends. The
// manifest route signs on demand as well, so Run only saves the first
// agent a wait.
func (c *Catalog) Run(ctx context.Context) {
	for {
		pending := false
		for _, a := range c.List() {
			if _, err := c.sign(ctx, a); err != nil {
				if ctx.Err() != nil {
					return
				}
				pending = true
				if cairn.ErrorCode(err) != cairn.ECodeAegisLocked {
					c.log.Warn("agent artifacts: sign manifest", "id", a.ID, "err", err)
				}
			}
		}
		wait := 10 * time.Minute
		if pending {
			wait = 30 * time.Second
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}
