// Package aegis is Cairn's master cipher. An operator passphrase is stretched
// with Argon2id into a key-encryption key that wraps a random 256-bit data
// key; the data key seals every stored secret with AES-256-GCM. Only the
// wrapped key is stored, so after a restart nothing can be decrypted until
// someone gives the passphrase again (the cipher is "locked").
package aegis

import (
	"bytes"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/crypto/argon2"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/db"
)

// KDFParams are the Argon2id cost parameters used to derive the KEK.
type KDFParams struct {
	Time      uint32
	MemoryKiB uint32
	Threads   uint8
}

// DefaultKDF follows the RFC 9106 second recommendation (64 MiB, t=3).
var DefaultKDF = KDFParams{Time: 3, MemoryKiB: 64 * 1024, Threads: 2}

// Bounds of KDF parameters read from the database. The row is trusted to
// pick the cost, but a corrupted or tampered row must not make an unlock
// allocate gigabytes or spin for hours: values outside these are refused
// before Argon2 runs.
const (
	maxKDFTime      = 16
	maxKDFMemoryKiB = 1 << 20 // 1 GiB
	maxKDFThreads   = 16
)

// Check refuses parameters outside the bounds above (and Argon2's own
// minimum of 8 KiB per lane).
func (p KDFParams) Check() error {
	switch {
	case p.Time < 1 || p.Time > maxKDFTime:
		return cairn.Errorf(cairn.ECodeUnavailable, "the stored master-cipher KDF time cost %d is outside 1..%d; the aegis_state row is damaged", p.Time, maxKDFTime)
	case p.Threads < 1 || p.Threads > maxKDFThreads:
		return cairn.Errorf(cairn.ECodeUnavailable, "the stored master-cipher KDF parallelism %d is outside 1..%d; the aegis_state row is damaged", p.Threads, maxKDFThreads)
	case p.MemoryKiB < 8*uint32(p.Threads) || p.MemoryKiB > maxKDFMemoryKiB:
		return cairn.Errorf(cairn.ECodeUnavailable, "the stored master-cipher KDF memory %d KiB is outside %d..%d KiB; the aegis_state row is damaged",
			p.MemoryKiB, 8*uint32(p.Threads), maxKDFMemoryKiB)
	}
	return nil
}

// State is the persisted form of the cipher.
type State struct {
	Salt       []byte
	KDF        KDFParams
	WrappedKey []byte
	KeyID      []byte
	CreatedAt  time.Time
	RotatedAt  *time.Time
}

// Store persists the single cipher state row.
type Store interface {
	// AegisState returns the state, or (nil, nil) when none is configured.
	AegisState(ctx context.Context) (*State, error)
	AegisInsert(ctx context.Context, s State) error
	// AegisRekey replaces the state with keyID by next (a new data key)
	// and runs reseal in the same transaction; it reports false when that
	// state no longer exists. Nothing is stored unless reseal succeeds.
	AegisRekey(ctx context.Context, keyID []byte, next State, reseal func(context.Context, *db.Queries) error) (bool, error)
}

// Status is what GET /api/aegis/status reports.
type Status struct {
	Configured bool
	Unlocked   bool
	KDF        KDFParams
	CreatedAt  *time.Time
	RotatedAt  *time.Time
}

const (
	minPassphrase = 12
	maxPassphrase = 1024
	sealVersion   = 1
	keyIDLen      = 8
)

var (
	// ErrLocked is returned by Seal and Open while no data key is held.
	ErrLocked = cairn.Errorf(cairn.ECodeAegisLocked, "the master cipher is locked")
	// ErrRotating is returned by Seal (and Rotate) while this process
	// rotates the data key.
	ErrRotating = cairn.Errorf(cairn.ECodeConflict, "the master cipher is rotating its data key; try again")
	// ErrForeignKey is returned by Open for a value sealed by another cipher
	// (one that was since force-reset).
	ErrForeignKey = errors.New("aegis: value was sealed by a master cipher that no longer exists")
)

// Cipher holds the unwrapped data key of this process, if any.
type Cipher struct {
	store Store
	kdf   KDFParams

	mu      sync.RWMutex
	aead    cipher.AEAD
	keyID   []byte
	columns []Column
	// backupKey seals backups (backup.go), derived from the data key.
	backupKey []byte
	// rotating is set during a data-key rotation: Seal refuses (conflict)
	// rather than seal a value with the key being replaced. It does not
	// wait, since the caller may hold a row lock the rotation needs.
	rotating atomic.Bool
	// onUnlock runs after Setup and Unlock (server keys seal themselves);
	// onLock after a held key is forgotten.
	onUnlock []func(context.Context)
	onLock   []func()
}

// OnUnlock adds f to what runs after each Setup and Unlock of this process.
func (c *Cipher) OnUnlock(f func(context.Context)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.onUnlock = append(c.onUnlock, f)
}

func (c *Cipher) unlocked(ctx context.Context) {
	c.mu.RLock()
	hooks := slices.Clone(c.onUnlock)
	c.mu.RUnlock()
	for _, f := range hooks {
		f(ctx)
	}
}

// New returns a locked cipher over store. kdf is used for new setups and
// rotations (tests pass a cheap one).
func New(store Store, kdf KDFParams) *Cipher {
	if err := kdf.Check(); err != nil {
		panic("aegis: " + err.Error())
	}
	return &Cipher{store: store, kdf: kdf}
}

// CheckPassphrase validates a new passphrase; field names the request field.
func CheckPassphrase(field, p string) error {
	n := len([]rune(p))
	switch {
	case n < minPassphrase:
		return cairn.Invalid(field, fmt.Sprintf("must be at least %d characters", minPassphrase))
	case n > maxPassphrase:
		return cairn.Invalid(field, fmt.Sprintf("must be at most %d characters", maxPassphrase))
	}
	return nil
}

// Unlocked reports whether this process holds the data key.
func (c *Cipher) Unlocked() bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.aead != nil
}

// Lock forgets the data key, then runs the OnLock hooks if it held one.
func (c *Cipher) Lock() {
	c.mu.Lock()
	held := c.aead != nil
	c.aead, c.keyID, c.backupKey = nil, nil, nil
	hooks := slices.Clone(c.onLock)
	c.mu.Unlock()
	if held {
		for _, f := range hooks {
			f()
		}
	}
}

// OnLock adds f to what runs after this process forgets its data key
// (Lock, or Reconcile after another replica reset the cipher).
func (c *Cipher) OnLock(f func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.onLock = append(c.onLock, f)
}

// KeyID returns the ID of the held data key (nil while locked).
func (c *Cipher) KeyID() []byte {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return bytes.Clone(c.keyID)
}

// Status reports the configured state and whether this process is unlocked.
func (c *Cipher) Status(ctx context.Context) (Status, error) {
	st, err := c.store.AegisState(ctx)
	if err != nil {
		return Status{}, err
	}
	if st == nil {
		return Status{Unlocked: false}, nil
	}
	created := st.CreatedAt
	return Status{Configured: true, Unlocked: c.Unlocked(), KDF: st.KDF, CreatedAt: &created, RotatedAt: st.RotatedAt}, nil
}

// Setup creates a new cipher with a fresh data key and leaves it unlocked.
func (c *Cipher) Setup(ctx context.Context, passphrase string) error {
	if err := CheckPassphrase("passphrase", passphrase); err != nil {
		return err
	}
	st, err := c.store.AegisState(ctx)
	if err != nil {
		return err
	}
	if st != nil {
		return cairn.Errorf(cairn.ECodeAegisConfigured, "a master cipher is already configured")
	}
	dataKey := randomBytes(32)
	salt := randomBytes(16)
	wrapped, err := wrap(deriveKEK(passphrase, salt, c.kdf), dataKey)
	if err != nil {
		return err
	}
	keyID := randomBytes(keyIDLen)
	if err := c.store.AegisInsert(ctx, State{Salt: salt, KDF: c.kdf, WrappedKey: wrapped, KeyID: keyID}); err != nil {
		return err
	}
	if err := c.hold(dataKey, keyID); err != nil {
		return err
	}
	c.unlocked(ctx)
	return nil
}

// Unlock unwraps the data key with passphrase. A wrong passphrase returns
// invalid_passphrase and leaves the cipher as it was.
func (c *Cipher) Unlock(ctx context.Context, passphrase string) error {
	st, err := c.store.AegisState(ctx)
	if err != nil {
		return err
	}
	if st == nil {
		return cairn.Errorf(cairn.ECodeWrongPhase, "no master cipher is configured")
	}
	if err := st.KDF.Check(); err != nil {
		return err
	}
	dataKey, err := unwrap(deriveKEK(passphrase, st.Salt, st.KDF), st.WrappedKey)
	if err != nil {
		return cairn.Errorf(cairn.ECodeInvalidPassphrase, "the passphrase is not correct")
	}
	if err := c.hold(dataKey, st.KeyID); err != nil {
		return err
	}
	c.unlocked(ctx)
	return nil
}

// Rotate replaces the data key and re-wraps it under a new passphrase
// (which may be the current one: that rotates the data key alone). Every
// sealed value of the registered columns is re-sealed in the transaction
// that stores the new key. Other replicas holding the old key lock
// themselves (Reconcile) and must be unlocked again.
func (c *Cipher) Rotate(ctx context.Context, current, next string) error {
	if err := CheckPassphrase("new_passphrase", next); err != nil {
		return err
	}
	st, err := c.store.AegisState(ctx)
	if err != nil {
		return err
	}
	if st == nil {
		return cairn.Errorf(cairn.ECodeWrongPhase, "no master cipher is configured")
	}
	if err := st.KDF.Check(); err != nil {
		return err
	}
	oldKey, err := unwrap(deriveKEK(current, st.Salt, st.KDF), st.WrappedKey)
	if err != nil {
		return cairn.Errorf(cairn.ECodeInvalidPassphrase, "the current passphrase is not correct")
	}
	newKey, salt, newID := randomBytes(32), randomBytes(16), randomBytes(keyIDLen)
	wrapped, err := wrap(deriveKEK(next, salt, c.kdf), newKey)
	if err != nil {
		return err
	}
	r := &Resealer{oldID: st.KeyID, nextID: newID}
	if r.old, err = newAEAD(oldKey); err != nil {
		return err
	}
	if r.next, err = newAEAD(newKey); err != nil {
		return err
	}
	// No Seal on this replica between here and the new key being held.
	if !c.rotating.CompareAndSwap(false, true) {
		return ErrRotating
	}
	defer c.rotating.Store(false)
	ok, err := c.store.AegisRekey(ctx, st.KeyID, State{Salt: salt, KDF: c.kdf, WrappedKey: wrapped, KeyID: newID},
		func(ctx context.Context, q *db.Queries) error { return c.resealAll(ctx, q, r) })
	if err != nil {
		return err
	}
	if !ok {
		return cairn.Errorf(cairn.ECodeConflict, "the master cipher changed during rotation; try again")
	}
	return c.hold(newKey, newID)
}

// Reconcile locks this process when the stored cipher is no longer the one
// it holds (another replica reset it). Called on cipher change events.
func (c *Cipher) Reconcile(ctx context.Context) error {
	held := c.KeyID()
	if held == nil {
		return nil
	}
	st, err := c.store.AegisState(ctx)
	if err != nil {
		return err
	}
	if st == nil || !bytes.Equal(st.KeyID, held) {
		c.Lock()
	}
	return nil
}

// Seal encrypts plaintext with the data key. The result carries a version
// byte, the key ID and the nonce; aad binds it to its purpose (for example
// "user-password:42") so a sealed value cannot be moved to another record.
func (c *Cipher) Seal(plaintext, aad []byte) ([]byte, error) {
	if c.rotating.Load() {
		return nil, ErrRotating
	}
	c.mu.RLock()
	aead, keyID := c.aead, c.keyID
	c.mu.RUnlock()
	if aead == nil {
		return nil, ErrLocked
	}
	return seal(aead, keyID, plaintext, aad), nil
}

// Open decrypts a value produced by Seal with the same aad.
func (c *Cipher) Open(sealed, aad []byte) ([]byte, error) {
	c.mu.RLock()
	aead, keyID := c.aead, c.keyID
	c.mu.RUnlock()
	if aead == nil {
		return nil, ErrLocked
	}
	return open(aead, keyID, sealed, aad)
}

func seal(aead cipher.AEAD, keyID, plaintext, aad []byte) []byte {
	nonce := randomBytes(aead.NonceSize())
	out := make([]byte, 0, 1+len(keyID)+len(nonce)+len(plaintext)+aead.Overhead())
	out = append(out, sealVersion)
	out = append(out, keyID...)
	out = append(out, nonce...)
	return aead.Seal(out, nonce, plaintext, aad)
}

func open(aead cipher.AEAD, keyID, sealed, aad []byte) ([]byte, error) {
	head := 1 + keyIDLen + aead.NonceSize()
	if len(sealed) < head+aead.Overhead() || sealed[0] != sealVersion {
		return nil, errors.New("aegis: malformed sealed value")
	}
	if !bytes.Equal(sealed[1:1+keyIDLen], keyID) {
		return nil, ErrForeignKey
	}
	nonce := sealed[1+keyIDLen : head]
	plain, err := aead.Open(nil, nonce, sealed[head:], aad)
	if err != nil {
		return nil, errors.New("aegis: sealed value failed authentication")
	}
	return plain, nil
}

func (c *Cipher) hold(dataKey, keyID []byte) error {
	aead, err := newAEAD(dataKey)
	if err != nil {
		return err
	}
	backupKey, err := deriveBackupKey(dataKey)
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.aead, c.keyID, c.backupKey = aead, bytes.Clone(keyID), backupKey
	return nil
}

func deriveKEK(passphrase string, salt []byte, p KDFParams) []byte {
	return argon2.IDKey([]byte(passphrase), salt, p.Time, p.MemoryKiB, p.Threads, 32)
}

// wrap seals the data key under the KEK: nonce || AES-256-GCM(dataKey).
func wrap(kek, dataKey []byte) ([]byte, error) {
	aead, err := newAEAD(kek)
	if err != nil {
		return nil, err
	}
	nonce := randomBytes(aead.NonceSize())
	return aead.Seal(nonce, nonce, dataKey, []byte("cairn-aegis-data-key")), nil
}

func unwrap(kek, wrapped []byte) ([]byte, error) {
	aead, err := newAEAD(kek)
	if err != nil {
		return nil, err
	}
	if len(wrapped) < aead.NonceSize() {
		return nil, errors.New("aegis: malformed wrapped key")
	}
	n := aead.NonceSize()
	return aead.Open(nil, wrapped[:n], wrapped[n:], []byte("cairn-aegis-data-key"))
}

func newAEAD(key []byte) (cipher.AEAD, error) {
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(block)
}

func randomBytes(n int) []byte {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic("aegis: crypto/rand failed: " + err.Error())
	}
	return b
}

// Watch calls Reconcile whenever changes fires (another replica reset or
// rotated the cipher), until ctx ends.
func (c *Cipher) Watch(ctx context.Context, changes <-chan struct{}, log *slog.Logger) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-changes:
			if err := c.Reconcile(ctx); err != nil && ctx.Err() == nil {
				log.Error("reconcile master cipher", "err", err)
			}
		}
	}
}
