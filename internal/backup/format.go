package backup

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/internal/aegis"
)

// The file (docs/architecture.md "Backup and restore"): a JSON envelope
// whose ciphertext_b64 is AES-256-GCM over the gzip-compressed payload,
// under the backup key of the master cipher (aegis.BackupKey). Everything
// the envelope says in the clear is bound into the GCM tag as associated
// data, so it cannot be edited without the file failing to open.
const (
	// Kind names the envelope; PayloadKind the decrypted payload.
	Kind        = "cairn-engine-backup"
	PayloadKind = "cairn-engine-backup-payload"
	// Format is the envelope's own version (schema_version is the
	// database schema's: the newest migration of the Engine that wrote it).
	Format      = 1
	Cipher      = "AES-256-GCM"
	Compression = "gzip"
	KDFArgon2id = "argon2id"
)

// KDFParams are the master cipher's key derivation and wrapped data key:
// with the source passphrase they give the backup key on any Engine.
type KDFParams struct {
	Algorithm     string `json:"algorithm"`
	Time          uint32 `json:"time"`
	MemoryKiB     uint32 `json:"memory_kib"`
	Threads       uint8  `json:"threads"`
	SaltB64       string `json:"salt_b64"`
	WrappedKeyB64 string `json:"wrapped_key_b64"`
	KeyIDB64      string `json:"key_id_b64"`
}

// Envelope is the file's JSON object; CiphertextB64 is written and read
// last.
type Envelope struct {
	Kind          string    `json:"kind"`
	Format        int       `json:"format"`
	SchemaVersion int64     `json:"schema_version"`
	CreatedAt     time.Time `json:"created_at"`
	Cipher        string    `json:"cipher"`
	Compression   string    `json:"compression"`
	KDFParams     KDFParams `json:"kdf_params"`
	NonceB64      string    `json:"nonce_b64"`
	CiphertextB64 string    `json:"ciphertext_b64"`
}

// associatedData binds the clear fields to the ciphertext.
func (e *Envelope) associatedData() []byte {
	k := e.KDFParams
	return []byte(fmt.Sprintf("%s|%d|%d|%s|%s|%s|%s|%d|%d|%d|%s|%s|%s", e.Kind, e.Format, e.SchemaVersion,
		e.CreatedAt.UTC().Format(time.RFC3339Nano), e.Cipher, e.Compression, k.Algorithm, k.Time, k.MemoryKiB, k.Threads,
		k.SaltB64, k.WrappedKeyB64, k.KeyIDB64))
}

func kdfParamsOf(st aegis.State) KDFParams {
	return KDFParams{Algorithm: KDFArgon2id, Time: st.KDF.Time, MemoryKiB: st.KDF.MemoryKiB, Threads: st.KDF.Threads,
		SaltB64: base64.StdEncoding.EncodeToString(st.Salt), WrappedKeyB64: base64.StdEncoding.EncodeToString(st.WrappedKey),
		KeyIDB64: base64.StdEncoding.EncodeToString(st.KeyID)}
}

// cipherState is the aegis state the envelope names (for the passphrase).
func (k KDFParams) cipherState() (aegis.State, error) {
	st := aegis.State{KDF: aegis.KDFParams{Time: k.Time, MemoryKiB: k.MemoryKiB, Threads: k.Threads}}
	var err error
	if st.Salt, err = base64.StdEncoding.DecodeString(k.SaltB64); err != nil || len(st.Salt) == 0 {
		return st, malformed("kdf_params.salt_b64 is not base64")
	}
	if st.WrappedKey, err = base64.StdEncoding.DecodeString(k.WrappedKeyB64); err != nil || len(st.WrappedKey) == 0 {
		return st, malformed("kdf_params.wrapped_key_b64 is not base64")
	}
	if st.KeyID, err = base64.StdEncoding.DecodeString(k.KeyIDB64); err != nil || len(st.KeyID) == 0 {
		return st, malformed("kdf_params.key_id_b64 is not base64")
	}
	return st, nil
}

func newGCM(key []byte) (cipher.AEAD, error) {
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(block)
}

// writeEnvelope writes e (without ciphertext) and then the ciphertext of
// plain, sealed in place, base64-encoded straight into w.
func writeEnvelope(w io.Writer, e Envelope, key, plain []byte) error {
	aead, err := newGCM(key)
	if err != nil {
		return err
	}
	nonce := make([]byte, aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return err
	}
	e.NonceB64 = base64.StdEncoding.EncodeToString(nonce)
	sealed := aead.Seal(plain[:0], nonce, plain, e.associatedData())
	head, err := json.Marshal(e)
	if err != nil {
		return err
	}
	// head ends in `"ciphertext_b64":""}`: cut the closing quote and brace
	// and stream the base64 text in their place.
	const tail = `""}`
	if _, err := w.Write(head[:len(head)-len(tail)]); err != nil {
		return err
	}
	if _, err := io.WriteString(w, `"`); err != nil {
		return err
	}
	enc := base64.NewEncoder(base64.StdEncoding, w)
	if _, err := enc.Write(sealed); err != nil {
		return err
	}
	if err := enc.Close(); err != nil {
		return err
	}
	_, err = io.WriteString(w, "\"}\n")
	return err
}

// readEnvelope reads and checks an envelope.
func readEnvelope(r io.Reader) (*Envelope, []byte, error) {
	var e Envelope
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&e); err != nil {
		return nil, nil, malformed("the file is not a Cairn backup (JSON: " + err.Error() + ")")
	}
	switch {
	case e.Kind != Kind:
		return nil, nil, malformed("kind is " + strconv.Quote(e.Kind) + ", not " + Kind)
	case e.Format != Format:
		return nil, nil, malformed(fmt.Sprintf("format %d is not supported (this Engine reads %d)", e.Format, Format))
	case e.Cipher != Cipher:
		return nil, nil, malformed("cipher " + strconv.Quote(e.Cipher) + " is not supported")
	case e.Compression != Compression:
		return nil, nil, malformed("compression " + strconv.Quote(e.Compression) + " is not supported")
	case e.KDFParams.Algorithm != KDFArgon2id:
		return nil, nil, malformed("kdf_params.algorithm " + strconv.Quote(e.KDFParams.Algorithm) + " is not supported")
	case e.SchemaVersion < 1:
		return nil, nil, malformed("schema_version is missing")
	}
	ct, err := base64.StdEncoding.DecodeString(e.CiphertextB64)
	e.CiphertextB64 = ""
	if err != nil || len(ct) == 0 {
		return nil, nil, malformed("ciphertext_b64 is not base64")
	}
	return &e, ct, nil
}

// open decrypts ct in place.
func (e *Envelope) open(key, ct []byte) ([]byte, error) {
	aead, err := newGCM(key)
	if err != nil {
		return nil, err
	}
	nonce, err := base64.StdEncoding.DecodeString(e.NonceB64)
	if err != nil || len(nonce) != aead.NonceSize() {
		return nil, malformed("nonce_b64 is not a GCM nonce")
	}
	plain, err := aead.Open(ct[:0], nonce, ct, e.associatedData())
	if err != nil {
		return nil, cairn.Errorf(ECodeWrongCipher, "the backup does not open with this master cipher: it was written by another cipher, or the file was altered")
	}
	return plain, nil
}
