// Package scriptsign holds the Engine's script-signing key (SPEC
// Authentication rule 6): an Ed25519 key pair whose private half is sealed
// by the master cipher in PostgreSQL. Every script payload the Engine sends
// an agent is signed with the active key; agents trust the active and the
// previous key. A rotation makes a new active key and keeps the old one
// trusted as the previous key until every agent has the new one: an
// operator's rotation is refused while any agent still lacks the active
// key (unless forced), because it would retire the previous key. Payloads
// stored for later (a scheduled job's content, queued work) are signed
// again with the new key in the rotation, so no stored payload outlives
// the key that signed it, after they verify with a key trusted before the
// rotation (a row planted in the database is left as it is, unsigned by
// the new key, and agents refuse it).
//
// Agents do not take a key list on the Engine's word (issue 21 item 4):
// each rotation writes a chain link, the new trusted list signed by the
// outgoing active key, into script_key_links, and heartbeat answers carry
// every link. The artifact keys (agentartifacts) reach agents enrolled
// before them through an endorsement the active script key signs.
//
// Signing needs the master cipher unlocked in the calling process. A
// `cairn worker` process may never be unlocked, so payloads are signed by
// the process serving the operator's request and stored with the run.
package scriptsign

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/db"
	"github.com/cairn-rmm/cairn/internal/aegis"
)

// Key states.
const (
	StateActive   = "active"
	StatePrevious = "previous"
)

// ECodeRotationPending refuses a rotation while some agent does not trust
// the active key yet: it would retire the previous key that agent still
// relies on.
const ECodeRotationPending = "script_key_rotation_pending"

// trustTTL is how long the trusted key list is cached: heartbeats of
// thousands of agents read it, and a rotation reaches them a few seconds
// later at worst.
const trustTTL = 5 * time.Second

// Key is a public key as the admin route shows it.
type Key struct {
	KeyID     string
	PublicKey string // standard base64
	State     string
	CreatedAt time.Time
}

// Status is the keys plus how many agents already trust the active one.
type Status struct {
	Keys            []Key
	AgentsOnCurrent int64
	AgentsTotal     int64
}

// Signer signs script payloads and answers which keys agents must trust.
type Signer struct {
	store  *db.Store
	cipher *aegis.Cipher
	now    func() time.Time

	mu      sync.Mutex
	active  *openKey       // the opened active key, nil until first Sign
	trust   []string       // cached trusted keys, active first
	chain   []proto.Signed // cached key-chain links
	trustAt time.Time      // when trust and chain were read

	// artifactKeys are the artifact keys agents pin (SetArtifactKeys);
	// endorsement is their link signed by the active key endorsedBy.
	artifactKeys []string
	endorsement  *proto.Signed
	endorsedBy   string

	// reported holds each device's last reported key IDs (joined), so a
	// heartbeat writes only when they change.
	reported sync.Map
}

type openKey struct {
	id   string
	priv ed25519.PrivateKey
	at   time.Time
}

// New returns a signer.
func New(store *db.Store, cipher *aegis.Cipher) *Signer {
	return &Signer{store: store, cipher: cipher, now: time.Now}
}

// Sign signs payload with the active key, making the first key when there
// is none. It fails with aegis_locked while the cipher is locked.
func (s *Signer) Sign(ctx context.Context, payload []byte) (proto.Signed, error) {
	k, err := s.activeKey(ctx)
	if err != nil {
		return proto.Signed{}, err
	}
	return proto.Signed{Payload: payload, KeyID: k.id, Signature: ed25519.Sign(k.priv, payload)}, nil
}

// activeKey returns the opened active key, re-reading which key is active
// every trustTTL (another replica may have rotated).
func (s *Signer) activeKey(ctx context.Context) (*openKey, error) {
	if !s.cipher.Unlocked() {
		return nil, aegis.ErrLocked
	}
	s.mu.Lock()
	k := s.active
	s.mu.Unlock()
	if k != nil && s.now().Sub(k.at) < trustTTL {
		return k, nil
	}
	row, err := s.store.ScriptKeyActive(ctx)
	if db.IsNoRows(err) {
		if err := s.create(ctx, false); err != nil {
			return nil, err
		}
		row, err = s.store.ScriptKeyActive(ctx)
	}
	if err != nil {
		return nil, err
	}
	if k != nil && k.id == row.KeyID {
		k = &openKey{id: k.id, priv: k.priv, at: s.now()}
	} else {
		seed, err := s.cipher.Open(row.PrivateSealed, aad(row.KeyID))
		if errors.Is(err, aegis.ErrForeignKey) {
			// The master cipher was force-reset: the key cannot sign any
			// more. Replace it; agents keep trusting its public half as
			// the previous key.
			if err := s.create(ctx, true); err != nil {
				return nil, err
			}
			return s.activeKey(ctx)
		} else if err != nil {
			return nil, err
		}
		k = &openKey{id: row.KeyID, priv: ed25519.NewKeyFromSeed(seed), at: s.now()}
	}
	s.mu.Lock()
	s.active = k
	s.mu.Unlock()
	return k, nil
}

// create makes a new active key. With rotate, the current active key
// becomes previous and the earlier previous key is retired, and every
// stored payload another key signed is signed again with the new key, in
// one transaction; without, it does nothing when an active key exists
// (two processes making the first key at once).
func (s *Signer) create(ctx context.Context, rotate bool) error {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return err
	}
	id := proto.KeyID(pub)
	sealedBy := s.cipher.KeyID()
	sealed, err := s.cipher.Seal(priv.Seed(), aad(id))
	if err != nil {
		return err
	}
	err = s.store.InTx(ctx, func(q *db.Queries) error {
		var trustedBefore []string
		if rotate {
			before, err := q.ScriptKeyList(ctx)
			if err != nil {
				return err
			}
			for _, r := range before {
				trustedBefore = append(trustedBefore, base64.StdEncoding.EncodeToString(r.PublicKey))
			}
			cur, err := q.ScriptKeyActive(ctx)
			if err != nil && !db.IsNoRows(err) {
				return err
			}
			if err == nil {
				if err := s.link(ctx, q, cur, pub); err != nil {
					return err
				}
				if err := q.ScriptKeyRetirePrevious(ctx); err != nil {
					return err
				}
				if _, err := q.ScriptKeyDemoteActive(ctx, cur.KeyID); err != nil {
					return err
				}
			}
		}
		n, err := q.ScriptKeyInsertActive(ctx, db.ScriptKeyInsertActiveParams{
			KeyID: id, PublicKey: pub, PrivateSealed: sealed, SealedKeyID: sealedBy,
		})
		if err != nil || !rotate || n == 0 {
			return err
		}
		return resignStored(ctx, q, id, priv, trustedBefore)
	})
	s.forget()
	return err
}

// link writes the chain link of a rotation away from cur: the new trusted
// list (the new key, then cur) signed by cur. When cur cannot be opened
// (the master cipher was force-reset) no link can be made: agents keep
// the keys they have and refuse payloads of the new key until they are
// enrolled again (docs/agent.md "Signing chain").
func (s *Signer) link(ctx context.Context, q *db.Queries, cur db.ScriptSigningKey, next ed25519.PublicKey) error {
	seed, err := s.cipher.Open(cur.PrivateSealed, aad(cur.KeyID))
	if errors.Is(err, aegis.ErrForeignKey) {
		slog.Default().Warn("script signing: the outgoing key cannot be opened; agents cannot follow this rotation",
			"key_id", cur.KeyID)
		return nil
	} else if err != nil {
		return err
	}
	seq, err := q.ScriptKeyLinkNextSeq(ctx)
	if err != nil {
		return err
	}
	raw, err := json.Marshal(proto.KeyList{Purpose: proto.PurposeScriptKeys, Seq: seq, IssuedAt: s.now().UTC(),
		Keys: []string{base64.StdEncoding.EncodeToString(next), base64.StdEncoding.EncodeToString(cur.PublicKey)}})
	if err != nil {
		return err
	}
	signed, err := json.Marshal(proto.Signed{Payload: raw, KeyID: cur.KeyID, Signature: ed25519.Sign(ed25519.NewKeyFromSeed(seed), raw)})
	if err != nil {
		return err
	}
	return q.ScriptKeyLinkInsert(ctx, db.ScriptKeyLinkInsertParams{Seq: seq, Signed: signed})
}

// resignStored signs again, with the new active key, the stored payloads
// another key signed: the same payload bytes, so what runs is unchanged.
// Each must first verify with a key trusted before the rotation: one that
// does not (a row written straight into the database) is left as it is,
// never signed by the new key, and agents go on refusing it.
func resignStored(ctx context.Context, q *db.Queries, keyID string, priv ed25519.PrivateKey, trusted []string) error {
	errRefused := errors.New("does not verify with a trusted key")
	resign := func(raw []byte) ([]byte, error) {
		var sg proto.Signed
		if err := json.Unmarshal(raw, &sg); err != nil {
			return nil, errRefused
		}
		if _, err := sg.Verify(trusted); err != nil {
			return nil, errRefused
		}
		return json.Marshal(proto.Signed{Payload: sg.Payload, KeyID: keyID, Signature: ed25519.Sign(priv, sg.Payload)})
	}
	jobs, err := q.ScheduledJobSignedStale(ctx, keyID)
	if err != nil {
		return err
	}
	for _, j := range jobs {
		signed, err := resign(j.Signed)
		if errors.Is(err, errRefused) {
			slog.Default().Warn("script signing: a scheduled job's stored payload was not signed again", "job_id", j.ID, "err", err)
			continue
		} else if err != nil {
			return fmt.Errorf("scheduled job %d: %w", j.ID, err)
		}
		if err := q.ScheduledJobSignedUpdate(ctx, db.ScheduledJobSignedUpdateParams{ID: j.ID, Signed: signed}); err != nil {
			return err
		}
	}
	results, err := q.JobRunResultSignedStale(ctx, keyID)
	if err != nil {
		return err
	}
	for _, r := range results {
		signed, err := resign(r.Signed)
		if errors.Is(err, errRefused) {
			slog.Default().Warn("script signing: a queued payload was not signed again", "run_id", r.RunID,
				"device_guid", r.DeviceGuid, "err", err)
			continue
		} else if err != nil {
			return fmt.Errorf("run %s, device %s: %w", r.RunID, r.DeviceGuid, err)
		}
		if err := q.JobRunResultSignedUpdate(ctx, db.JobRunResultSignedUpdateParams{RunID: r.RunID, DeviceGuid: r.DeviceGuid,
			Signed: signed}); err != nil {
			return err
		}
	}
	return nil
}

// Rotate makes a new active key; the active key becomes previous (still
// trusted) and the previous one is retired (no longer trusted). Unless
// force, it is refused with ECodeRotationPending while any agent has not
// reported trusting the active key: retiring the previous key then could
// leave that agent trusting no key the Engine signs with. Force is for a
// key believed compromised; such an agent catches up at its next
// heartbeat.
func (s *Signer) Rotate(ctx context.Context, force bool) error {
	if !s.cipher.Unlocked() {
		return aegis.ErrLocked
	}
	if !force {
		st, err := s.Status(ctx)
		if err != nil {
			return err
		}
		if st.AgentsOnCurrent < st.AgentsTotal {
			return cairn.Errorf(ECodeRotationPending,
				"%d of %d agents do not trust the active script-signing key yet; rotate once they all do, or force the rotation",
				st.AgentsTotal-st.AgentsOnCurrent, st.AgentsTotal)
		}
	}
	return s.create(ctx, true)
}

// forget drops the caches after a change made by this process.
func (s *Signer) forget() {
	s.mu.Lock()
	s.active, s.trust, s.chain, s.trustAt = nil, nil, nil, time.Time{}
	s.mu.Unlock()
}

// TrustedPublicKeys returns the standard base64 public keys agents must
// trust, active first. With no key yet it makes one when the cipher is
// unlocked, and otherwise returns an empty list.
func (s *Signer) TrustedPublicKeys(ctx context.Context) ([]string, error) {
	s.mu.Lock()
	cached, at := s.trust, s.trustAt
	s.mu.Unlock()
	if cached != nil && s.now().Sub(at) < trustTTL {
		return slices.Clone(cached), nil
	}
	rows, err := s.store.ScriptKeyList(ctx)
	if err != nil {
		return nil, err
	}
	if len(rows) == 0 && s.cipher.Unlocked() {
		if err := s.create(ctx, false); err != nil {
			return nil, err
		}
		if rows, err = s.store.ScriptKeyList(ctx); err != nil {
			return nil, err
		}
	}
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = base64.StdEncoding.EncodeToString(r.PublicKey)
	}
	links, err := s.store.ScriptKeyLinkList(ctx)
	if err != nil {
		return nil, err
	}
	chain := make([]proto.Signed, 0, len(links))
	for _, l := range links {
		var sg proto.Signed
		if json.Unmarshal(l.Signed, &sg) == nil {
			chain = append(chain, sg)
		}
	}
	s.mu.Lock()
	s.trust, s.chain, s.trustAt = out, chain, s.now()
	s.mu.Unlock()
	return slices.Clone(out), nil
}

// SetArtifactKeys names the artifact keys (standard base64) agents pin at
// enrollment and are endorsed to agents that have none.
func (s *Signer) SetArtifactKeys(keys []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.artifactKeys, s.endorsement, s.endorsedBy = slices.Clone(keys), nil, ""
}

// artifactEndorsement is the first link of the artifact-key chain: the
// artifact keys signed by the active script key (nil while the cipher is
// locked or there are no artifact keys).
func (s *Signer) artifactEndorsement(ctx context.Context) *proto.Signed {
	s.mu.Lock()
	keys, e, by := s.artifactKeys, s.endorsement, s.endorsedBy
	s.mu.Unlock()
	if len(keys) == 0 || !s.cipher.Unlocked() {
		return e
	}
	k, err := s.activeKey(ctx)
	if err != nil {
		return e
	}
	if e != nil && by == k.id {
		return e
	}
	raw, err := json.Marshal(proto.KeyList{Purpose: proto.PurposeArtifactKeys, Seq: 1, Keys: keys, IssuedAt: s.now().UTC()})
	if err != nil {
		return e
	}
	sg := proto.Signed{Payload: raw, KeyID: k.id, Signature: ed25519.Sign(k.priv, raw)}
	s.mu.Lock()
	s.endorsement, s.endorsedBy = &sg, k.id
	s.mu.Unlock()
	return &sg
}

// Trust is TrustedPublicKeys as the wire's ScriptTrust, nil when there is
// no key yet (the agent then keeps what it has).
func (s *Signer) Trust(ctx context.Context) (*proto.ScriptTrust, error) {
	keys, err := s.TrustedPublicKeys(ctx)
	if err != nil || len(keys) == 0 {
		return nil, err
	}
	s.mu.Lock()
	t := &proto.ScriptTrust{TrustedPublicKeys: keys, Chain: slices.Clone(s.chain), ArtifactPublicKeys: slices.Clone(s.artifactKeys)}
	s.mu.Unlock()
	if e := s.artifactEndorsement(ctx); e != nil {
		t.ArtifactChain = []proto.Signed{*e}
	}
	return t, nil
}

// Status lists the trusted keys and counts the agents that reported
// trusting the active key.
func (s *Signer) Status(ctx context.Context) (Status, error) {
	if _, err := s.TrustedPublicKeys(ctx); err != nil { // makes the first key when possible
		return Status{}, err
	}
	rows, err := s.store.ScriptKeyList(ctx)
	if err != nil {
		return Status{}, err
	}
	st := Status{Keys: make([]Key, len(rows))}
	active := ""
	for i, r := range rows {
		st.Keys[i] = Key{KeyID: r.KeyID, PublicKey: base64.StdEncoding.EncodeToString(r.PublicKey), State: r.State, CreatedAt: r.CreatedAt}
		if r.State == StateActive {
			active = r.KeyID
		}
	}
	c, err := s.store.ScriptTrustCounts(ctx, active)
	if err != nil {
		return Status{}, err
	}
	st.AgentsOnCurrent, st.AgentsTotal = c.OnCurrent, c.Total
	return st, nil
}

// Report records the key IDs a device says it trusts (from its
// heartbeat), writing only when they changed since this process last saw
// them.
func (s *Signer) Report(ctx context.Context, guid cairn.DeviceGUID, keyIDs []string) error {
	if len(keyIDs) == 0 {
		return nil
	}
	if len(keyIDs) > 8 {
		keyIDs = keyIDs[:8]
	}
	joined := strings.Join(keyIDs, ",")
	if prev, ok := s.reported.Load(guid); ok && prev.(string) == joined {
		return nil
	}
	if err := s.store.ScriptTrustReport(ctx, db.ScriptTrustReportParams{DeviceGuid: guid, KeyIds: keyIDs}); err != nil {
		return err
	}
	s.reported.Store(guid, joined)
	return nil
}

// Verify checks a payload signed by this Engine against the keys agents
// trust now (for tests and the Engine's own checks).
func (s *Signer) Verify(ctx context.Context, sg proto.Signed) ([]byte, error) {
	keys, err := s.TrustedPublicKeys(ctx)
	if err != nil {
		return nil, err
	}
	return sg.Verify(keys)
}

// aad binds a sealed seed to its key.
func aad(keyID string) []byte { return []byte("cairn:script-signing:" + keyID) }
