package aegis

import (
	"bytes"
	"context"
	"crypto/hkdf"
	"crypto/sha256"

	"github.com/cairn-rmm/cairn"
)

// Backups (issue 26, SPEC "Backup and restore rules" 1) are sealed with
// AES-256-GCM under a key derived from the data key, so a backup needs the
// cipher of the Engine that wrote it: the file carries the cipher's
// wrapped data key and KDF parameters, and the source passphrase unwraps
// it on any Engine, including a fresh one with no cipher of its own. A
// separate key (HKDF with its own label) keeps backup ciphertexts apart
// from sealed column values.
const backupKeyInfo = "cairn-engine-backup-v1"

func deriveBackupKey(dataKey []byte) ([]byte, error) {
	return hkdf.Key(sha256.New, dataKey, nil, backupKeyInfo, 32)
}

// BackupKey returns the backup key of the held data key, with the state
// the file records (KDF parameters, salt, wrapped key, key ID), or
// aegis_locked.
func (c *Cipher) BackupKey(ctx context.Context) ([]byte, State, error) {
	c.mu.RLock()
	key, keyID := bytes.Clone(c.backupKey), bytes.Clone(c.keyID)
	c.mu.RUnlock()
	if key == nil {
		return nil, State{}, ErrLocked
	}
	st, err := c.store.AegisState(ctx)
	if err != nil {
		return nil, State{}, err
	}
	if st == nil || !bytes.Equal(st.KeyID, keyID) {
		// Another replica rotated or reset the cipher under us.
		return nil, State{}, cairn.Errorf(cairn.ECodeConflict, "the master cipher changed; try again")
	}
	return key, *st, nil
}

// HeldBackupKey returns the backup key when this process holds the data
// key whose ID is keyID (a backup of this very cipher), else nil.
func (c *Cipher) HeldBackupKey(keyID []byte) []byte {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.backupKey == nil || !bytes.Equal(c.keyID, keyID) {
		return nil
	}
	return bytes.Clone(c.backupKey)
}

// BackupKeyFromPassphrase unwraps st's data key with passphrase and
// returns its backup key; a wrong passphrase answers invalid_passphrase.
// st comes from a backup file: its KDF parameters are bounded first.
func BackupKeyFromPassphrase(passphrase string, st State) ([]byte, error) {
	if err := st.KDF.Check(); err != nil {
		return nil, cairn.Invalid("kdf_params", "the backup's KDF parameters are out of bounds")
	}
	dataKey, err := unwrap(deriveKEK(passphrase, st.Salt, st.KDF), st.WrappedKey)
	if err != nil {
		return nil, cairn.Errorf(cairn.ECodeInvalidPassphrase, "the passphrase does not open this backup's master cipher")
	}
	return deriveBackupKey(dataKey)
}

// OpenWithPassphrase opens a value sealed by the cipher st describes (a
// backup's), unwrapping its data key with passphrase.
func OpenWithPassphrase(passphrase string, st State, sealed, aad []byte) ([]byte, error) {
	if err := st.KDF.Check(); err != nil {
		return nil, err
	}
	dataKey, err := unwrap(deriveKEK(passphrase, st.Salt, st.KDF), st.WrappedKey)
	if err != nil {
		return nil, cairn.Errorf(cairn.ECodeInvalidPassphrase, "the passphrase does not open this backup's master cipher")
	}
	aead, err := newAEAD(dataKey)
	if err != nil {
		return nil, err
	}
	return open(aead, st.KeyID, sealed, aad)
}
