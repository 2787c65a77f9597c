// Package backup writes, checks and restores Engine backups (issue 26;
// SPEC "Backup and restore rules" 1-4): an encrypted JSON file holding the
// rows of the tables Tables declares Export, under a key of the master
// cipher. The layout and its reasons are in docs/architecture.md "Backup
// and restore".
package backup

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/db"
	"github.com/cairn-rmm/cairn/internal/aegis"
)

// Error codes (declared in engine/capability_backup.go).
const (
	// ECodeMalformed: the file is not a well-formed Cairn backup.
	ECodeMalformed = "backup_malformed"
	// ECodeWrongCipher: the file does not open with the given passphrase
	// or this Engine's cipher.
	ECodeWrongCipher = "backup_wrong_cipher"
	// ECodeUnsupported: the file names tables, files or columns this
	// Engine's schema does not have (analyze reports them).
	ECodeUnsupported = "backup_unsupported"
)

// Confirmation is the phrase a restore must be sent with (SPEC Limits).
const Confirmation = "RESTORE ENGINE CONFIG BACKUP"

func malformed(msg string) error { return cairn.Errorf(ECodeMalformed, "malformed backup: %s", msg) }

// insertBatch is how many rows one INSERT carries.
const insertBatch = 500

// Service exports, analyses and restores.
type Service struct {
	store  *db.Store
	cipher *aegis.Cipher
	now    func() time.Time
	// tlsDir holds the local CA's files ("" : none to carry).
	tlsDir string
}

// SetLocalCA makes backups carry the local CA of dir (tlsca's directory),
// and restores write it back there.
func (s *Service) SetLocalCA(dir string) { s.tlsDir = dir }

// Files a backup may carry: the local CA, whose agents pin it (SPEC
// "Authentication" rule 6). Their content is sealed by the master cipher
// inside the payload, like every secret column.
var files = map[string]struct {
	name string
	mode os.FileMode
}{
	"tls/ca.pem":     {"ca.pem", 0o644},
	"tls/ca-key.pem": {"ca-key.pem", 0o600},
}

func fileAAD(id string) []byte { return []byte("cairn:backup-file:" + id) }

type payloadFile struct {
	ID        string `json:"id"`
	SealedB64 string `json:"sealed_b64"`
}

// exportFiles reads and seals the local CA's files.
func (s *Service) exportFiles() ([]payloadFile, error) {
	if s.tlsDir == "" {
		return []payloadFile{}, nil
	}
	out := []payloadFile{}
	for _, id := range slices.Sorted(maps.Keys(files)) {
		b, err := os.ReadFile(filepath.Join(s.tlsDir, files[id].name))
		if errors.Is(err, os.ErrNotExist) {
			return []payloadFile{}, nil
		} else if err != nil {
			return nil, err
		}
		sealed, err := s.cipher.Seal(b, fileAAD(id))
		if err != nil {
			return nil, err
		}
		out = append(out, payloadFile{ID: id, SealedB64: base64.StdEncoding.EncodeToString(sealed)})
	}
	return out, nil
}

// New returns the backup service.
func New(store *db.Store, cipher *aegis.Cipher, now func() time.Time) *Service {
	if now == nil {
		now = time.Now
	}
	return &Service{store: store, cipher: cipher, now: now}
}

// SchemaVersion is the running schema's version: the newest migration
// this Engine carries (and applied at start).
func SchemaVersion() int64 {
	var max int64
	entries, _ := fs.ReadDir(db.Migrations(), ".")
	for _, e := range entries {
		num, _, ok := strings.Cut(path.Base(e.Name()), "_")
		if n, err := strconv.ParseInt(num, 10, 64); ok && err == nil && n > max {
			max = n
		}
	}
	return max
}

// column is one column of the running schema.
type column struct {
	generated, optional, sequenced bool
}

// schema is the running schema: tables, their columns in order, and the
// tables each references.
type schema struct {
	tables  map[string]map[string]column
	order   map[string][]string
	parents map[string][]string
}

func (s *Service) schema(ctx context.Context, q *db.Queries) (*schema, error) {
	cols, err := q.BackupSchemaColumns(ctx)
	if err != nil {
		return nil, err
	}
	fks, err := q.BackupForeignKeys(ctx)
	if err != nil {
		return nil, err
	}
	sc := &schema{tables: map[string]map[string]column{}, order: map[string][]string{}, parents: map[string][]string{}}
	for _, c := range cols {
		if sc.tables[c.TableName] == nil {
			sc.tables[c.TableName] = map[string]column{}
		}
		sc.tables[c.TableName][c.ColumnName] = column{generated: c.Generated, optional: c.Optional, sequenced: c.Sequenced}
		sc.order[c.TableName] = append(sc.order[c.TableName], c.ColumnName)
	}
	for _, fk := range fks {
		sc.parents[fk.Child] = append(sc.parents[fk.Child], fk.Parent)
	}
	return sc, nil
}

// writable are the table's columns a backup carries: all but generated.
func (sc *schema) writable(table string) []string {
	var out []string
	for _, c := range sc.order[table] {
		if !sc.tables[table][c].generated {
			out = append(out, c)
		}
	}
	return out
}

// exportOrder is the exported tables, parents before children.
func (sc *schema) exportOrder() ([]Table, error) {
	decl := declared()
	var out []Table
	state := map[string]int{} // 1 visiting, 2 done
	var visit func(string) error
	visit = func(name string) error {
		switch state[name] {
		case 1:
			return fmt.Errorf("backup: foreign keys form a cycle through %s", name)
		case 2:
			return nil
		}
		state[name] = 1
		for _, p := range sc.parents[name] {
			if decl[p].Policy == Export {
				if err := visit(p); err != nil {
					return err
				}
			}
		}
		state[name] = 2
		out = append(out, decl[name])
		return nil
	}
	for _, t := range Tables {
		if t.Policy != Export {
			continue
		}
		if sc.tables[t.Name] == nil {
			return nil, fmt.Errorf("backup: declared table %s is not in the running schema", t.Name)
		}
		if err := visit(t.Name); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Export writes the encrypted backup of this Engine to w: the rows of
// every exported table, read from one snapshot, JSON-encoded row by row
// into a gzip stream, sealed, and base64-encoded straight into w. The
// master cipher must be unlocked (aegis_locked otherwise). AES-GCM seals
// one buffer, so the compressed payload is held once in memory; nothing
// else is (docs/architecture.md "Backup and restore").
func (s *Service) Export(ctx context.Context, w io.Writer) error {
	key, st, err := s.cipher.BackupKey(ctx)
	if err != nil {
		return err
	}
	carried, err := s.exportFiles()
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	created := s.now().UTC().Truncate(time.Microsecond)
	version := SchemaVersion()
	err = s.store.BackupSnapshot(ctx, func(tx pgx.Tx) error {
		sc, err := s.schema(ctx, db.New(tx))
		if err != nil {
			return err
		}
		order, err := sc.exportOrder()
		if err != nil {
			return err
		}
		head, _ := json.Marshal(map[string]any{"kind": PayloadKind, "schema_version": version, "created_at": created, "files": carried})
		if _, err := zw.Write(append(head[:len(head)-1], []byte(`,"tables":[`)...)); err != nil {
			return err
		}
		for i, t := range order {
			cols := sc.writable(t.Name)
			th, _ := json.Marshal(map[string]any{"columns": cols})
			name, _ := json.Marshal(t.Name)
			sep := ""
			if i > 0 {
				sep = ","
			}
			if _, err := fmt.Fprintf(zw, `%s{"name":%s,%s,"rows":[`, sep, name, th[1:len(th)-1]); err != nil {
				return err
			}
			first := true
			if err := db.BackupRows(ctx, tx, t.Name, cols, t.Filter, func(row []byte) error {
				if !first {
					if _, err := zw.Write([]byte{','}); err != nil {
						return err
					}
				}
				first = false
				_, err := zw.Write(row)
				return err
			}); err != nil {
				return fmt.Errorf("export %s: %w", t.Name, err)
			}
			if _, err := zw.Write([]byte("]}")); err != nil {
				return err
			}
		}
		_, err = zw.Write([]byte("]}"))
		return err
	})
	if err != nil {
		return err
	}
	if err := zw.Close(); err != nil {
		return err
	}
	env := Envelope{Kind: Kind, Format: Format, SchemaVersion: version, CreatedAt: created, Cipher: Cipher, Compression: Compression,
		KDFParams: kdfParamsOf(st)}
	return writeEnvelope(w, env, key, buf.Bytes())
}

// Opened is a decrypted backup: its envelope and compressed payload.
type Opened struct {
	SchemaVersion int64
	CreatedAt     time.Time
	payload       []byte
	// state is the cipher that wrote the file.
	state aegis.State
}

// Open reads and decrypts a backup file. With a passphrase it unwraps the
// file's own cipher state (any Engine, fresh ones included); without one
// it needs this Engine to hold the cipher that wrote the file.
func (s *Service) Open(r io.Reader, passphrase string) (*Opened, error) {
	env, ct, err := readEnvelope(r)
	if err != nil {
		return nil, err
	}
	st, err := env.KDFParams.cipherState()
	if err != nil {
		return nil, err
	}
	var key []byte
	if passphrase != "" {
		if key, err = aegis.BackupKeyFromPassphrase(passphrase, st); err != nil {
			if cairn.IsCode(err, cairn.ECodeInvalidPassphrase) {
				return nil, cairn.Errorf(ECodeWrongCipher, "the passphrase does not open this backup's master cipher")
			}
			return nil, err
		}
	} else if key = s.cipher.HeldBackupKey(st.KeyID); key == nil {
		return nil, cairn.Errorf(ECodeWrongCipher, "this backup was written by another master cipher (or this Engine's is locked): give the source Engine's passphrase")
	}
	plain, err := env.open(key, ct)
	if err != nil {
		return nil, err
	}
	return &Opened{SchemaVersion: env.SchemaVersion, CreatedAt: env.CreatedAt, payload: plain, state: st}, nil
}

// WrittenByHeldCipher reports whether o was written by the cipher this
// process holds (a restore of its own backup).
func (s *Service) WrittenByHeldCipher(o *Opened) bool {
	held := s.cipher.KeyID()
	return held != nil && bytes.Equal(held, o.state.KeyID)
}

// TableReport is one table of an analysis.
type TableReport struct {
	Name string `json:"name"`
	// Rows is how many rows a restore imports.
	Rows int64 `json:"rows"`
	// MissingColumns are the backup's columns the running schema lacks
	// (a restore refuses them); NewColumns the running schema's writable
	// columns the backup lacks (restored with their defaults, or refused
	// when they have none).
	MissingColumns []string `json:"missing_columns"`
	NewColumns     []string `json:"new_columns"`
}

// Report is what analyze answers.
type Report struct {
	SchemaVersion        int64         `json:"schema_version"`
	RunningSchemaVersion int64         `json:"running_schema_version"`
	CreatedAt            time.Time     `json:"created_at"`
	Tables               []TableReport `json:"tables"`
	// Files are the files the backup carries (the local CA).
	Files         []string `json:"files"`
	UnknownTables []string `json:"unknown_tables"`
	UnknownFiles  []string `json:"unknown_files"`
	// Restorable: nothing above stops a restore; Problems says what does.
	Restorable bool     `json:"restorable"`
	Problems   []string `json:"problems"`
}

// payloadTable is one table of a payload as it is read.
type payloadTable struct {
	Name    string
	Columns []string
}

// walk reads the payload, calling table for each table header and row for
// each of its rows (fn's slice is reused). It checks the structure only.
func (o *Opened) walk(table func(payloadTable) error, row func(payloadTable, json.RawMessage) error, file func(id string, sealed []byte) error) error {
	zr, err := gzip.NewReader(bytes.NewReader(o.payload))
	if err != nil {
		return malformed("the payload is not gzip")
	}
	dec := json.NewDecoder(zr)
	dec.UseNumber()
	expect := func(want json.Delim) error {
		tok, err := dec.Token()
		if err != nil {
			return malformed("payload JSON: " + err.Error())
		}
		if d, ok := tok.(json.Delim); !ok || d != want {
			return malformed(fmt.Sprintf("payload JSON: expected %q, got %v", want, tok))
		}
		return nil
	}
	key := func() (string, error) {
		tok, err := dec.Token()
		if err != nil {
			return "", malformed("payload JSON: " + err.Error())
		}
		k, ok := tok.(string)
		if !ok {
			return "", malformed(fmt.Sprintf("payload JSON: expected a key, got %v", tok))
		}
		return k, nil
	}
	if err := expect('{'); err != nil {
		return err
	}
	var kind string
	var version json.Number
	seenTables := map[string]bool{}
	for dec.More() {
		k, err := key()
		if err != nil {
			return err
		}
		switch k {
		case "kind":
			if err := dec.Decode(&kind); err != nil || kind != PayloadKind {
				return malformed("the payload's kind is not " + PayloadKind)
			}
		case "schema_version":
			if err := dec.Decode(&version); err != nil || version.String() != strconv.FormatInt(o.SchemaVersion, 10) {
				return malformed("the payload's schema_version differs from the envelope's")
			}
		case "created_at":
			var t time.Time
			if err := dec.Decode(&t); err != nil {
				return malformed("the payload's created_at is not a time")
			}
		case "files":
			var list []payloadFile
			if err := dec.Decode(&list); err != nil {
				return malformed("files is not a list of files")
			}
			for _, f := range list {
				sealed, err := base64.StdEncoding.DecodeString(f.SealedB64)
				if err != nil || f.ID == "" {
					return malformed("a file without an id or with bad sealed_b64")
				}
				if err := file(f.ID, sealed); err != nil {
					return err
				}
			}
		case "tables":
			if err := expect('['); err != nil {
				return err
			}
			for dec.More() {
				if err := expect('{'); err != nil {
					return err
				}
				var t payloadTable
				for dec.More() {
					k, err := key()
					if err != nil {
						return err
					}
					switch k {
					case "name":
						if err := dec.Decode(&t.Name); err != nil || t.Name == "" {
							return malformed("a table without a name")
						}
					case "columns":
						if err := dec.Decode(&t.Columns); err != nil || len(t.Columns) == 0 {
							return malformed("table " + t.Name + " has no column list")
						}
					case "rows":
						if t.Name == "" || t.Columns == nil {
							return malformed("a table's rows come before its name and columns")
						}
						if seenTables[t.Name] {
							return malformed("table " + t.Name + " appears twice")
						}
						seenTables[t.Name] = true
						if err := table(t); err != nil {
							return err
						}
						if err := expect('['); err != nil {
							return err
						}
						cols := map[string]bool{}
						for _, c := range t.Columns {
							cols[c] = true
						}
						for dec.More() {
							var raw json.RawMessage
							if err := dec.Decode(&raw); err != nil {
								return malformed("a row of " + t.Name + ": " + err.Error())
							}
							var obj map[string]json.RawMessage
							if err := json.Unmarshal(raw, &obj); err != nil {
								return malformed("a row of " + t.Name + " is not an object")
							}
							for c := range obj {
								if !cols[c] {
									return malformed("a row of " + t.Name + " has column " + c + " its column list lacks")
								}
							}
							if err := row(t, raw); err != nil {
								return err
							}
						}
						if err := expect(']'); err != nil {
							return err
						}
					default:
						return malformed("unknown table field " + strconv.Quote(k))
					}
				}
				if err := expect('}'); err != nil {
					return err
				}
				if !seenTables[t.Name] {
					return malformed("table " + t.Name + " has no rows list")
				}
			}
			if err := expect(']'); err != nil {
				return err
			}
		default:
			return malformed("unknown payload field " + strconv.Quote(k))
		}
	}
	if err := expect('}'); err != nil {
		return err
	}
	if kind != PayloadKind {
		return malformed("the payload has no kind")
	}
	if _, err := dec.Token(); err != io.EOF {
		return malformed("data after the payload")
	}
	return nil
}

// Analyze decrypts nothing further and changes nothing: it walks the
// payload against the running schema and reports what a restore would do.
func (s *Service) Analyze(ctx context.Context, o *Opened) (*Report, error) {
	sc, err := s.schema(ctx, s.store.Queries)
	if err != nil {
		return nil, err
	}
	return analyze(o, sc)
}

func analyze(o *Opened, sc *schema) (*Report, error) {
	decl := declared()
	rep := &Report{SchemaVersion: o.SchemaVersion, RunningSchemaVersion: SchemaVersion(), CreatedAt: o.CreatedAt,
		Tables: []TableReport{}, Files: []string{}, UnknownTables: []string{}, UnknownFiles: []string{}, Problems: []string{}}
	index := map[string]int{}
	restored := map[string]bool{}
	err := o.walk(func(t payloadTable) error {
		if d, ok := decl[t.Name]; !ok || d.Policy != Export || sc.tables[t.Name] == nil {
			rep.UnknownTables = append(rep.UnknownTables, t.Name)
			rep.Problems = append(rep.Problems, "table "+t.Name+" is not one this Engine restores")
			return nil
		}
		tr := TableReport{Name: t.Name, MissingColumns: []string{}, NewColumns: []string{}}
		have := map[string]bool{}
		for _, c := range t.Columns {
			have[c] = true
			if col, ok := sc.tables[t.Name][c]; !ok || col.generated {
				tr.MissingColumns = append(tr.MissingColumns, c)
				rep.Problems = append(rep.Problems, "column "+t.Name+"."+c+" is not in the running schema")
			}
		}
		for _, c := range sc.writable(t.Name) {
			if !have[c] {
				tr.NewColumns = append(tr.NewColumns, c)
				if !sc.tables[t.Name][c].optional {
					rep.Problems = append(rep.Problems, "column "+t.Name+"."+c+" has no value in the backup and no default")
				}
			}
		}
		for _, p := range sc.parents[t.Name] {
			if decl[p].Policy == Export && !restored[p] {
				rep.Problems = append(rep.Problems, "table "+t.Name+" comes before "+p+", which it references")
			}
		}
		restored[t.Name] = true
		index[t.Name] = len(rep.Tables)
		rep.Tables = append(rep.Tables, tr)
		return nil
	}, func(t payloadTable, _ json.RawMessage) error {
		if i, ok := index[t.Name]; ok {
			rep.Tables[i].Rows++
		}
		return nil
	}, func(id string, _ []byte) error {
		if _, ok := files[id]; ok {
			rep.Files = append(rep.Files, id)
			return nil
		}
		rep.UnknownFiles = append(rep.UnknownFiles, id)
		rep.Problems = append(rep.Problems, "file "+strconv.Quote(id)+" is not one this Engine restores")
		return nil
	})
	if err != nil {
		return nil, err
	}
	if !restored["aegis_state"] {
		rep.Problems = append(rep.Problems, "the backup holds no master-cipher state")
	}
	rep.Restorable = len(rep.Problems) == 0
	return rep, nil
}

// refusal turns a report that stops a restore into backup_unsupported.
func (r *Report) refusal() error {
	if r.Restorable {
		return nil
	}
	return &cairn.Error{Code: ECodeUnsupported, Message: "this backup cannot be restored onto this Engine: " + strings.Join(r.Problems, "; "),
		Fields: map[string]string{"file": strings.Join(r.Problems, "; ")}}
}

// Stage checks o as a restore would and stores it for Apply; it returns
// the restore's ID. Nothing else changes.
func (s *Service) Stage(ctx context.Context, o *Opened, by string) (string, *Report, error) {
	rep, err := s.Analyze(ctx, o)
	if err != nil {
		return "", nil, err
	}
	if err := rep.refusal(); err != nil {
		return "", rep, err
	}
	id := newID()
	// A restore staged and never applied (its request failed before the
	// workflow ran) is dropped after a day.
	if _, err := s.store.Queries.BackupRestoreDeleteOlderThan(ctx, s.now().Add(-24*time.Hour)); err != nil {
		return "", nil, err
	}
	if err := s.store.Queries.BackupRestoreStage(ctx, db.BackupRestoreStageParams{ID: id, SchemaVersion: int32(o.SchemaVersion),
		Payload: o.payload, CreatedBy: by}); err != nil {
		return "", nil, err
	}
	return id, rep, nil
}

// Result is what Apply did.
type Result struct {
	// Applied is false when the restore had already been applied (a
	// retried activity after its commit).
	Applied bool             `json:"applied"`
	Rows    map[string]int64 `json:"rows"`
}

// Apply restores the staged backup id in one transaction: every table but
// the internal ones is emptied, the backup's rows inserted, sequences moved
// past them, and the staged row consumed. A crash at any point leaves
// either the previous state (and the staged row, so a retry applies it)
// or the restored one (and no staged row, which a retry reports as done).
func (s *Service) Apply(ctx context.Context, id string) (Result, error) {
	res := Result{Rows: map[string]int64{}}
	err := s.store.BackupRestoreTx(ctx, func(tx pgx.Tx, q *db.Queries) error {
		staged, err := q.BackupRestoreTake(ctx, id)
		if db.IsNoRows(err) {
			return nil
		} else if err != nil {
			return err
		}
		res.Applied = true
		sc, err := s.schema(ctx, q)
		if err != nil {
			return err
		}
		o := &Opened{SchemaVersion: int64(staged.SchemaVersion), payload: staged.Payload}
		rep, err := analyze(o, sc)
		if err != nil {
			return err
		}
		if err := rep.refusal(); err != nil {
			return err
		}
		// Derived tables are emptied on their own: a trigger of
		// device_software empties the software audit when it is truncated,
		// which one TRUNCATE naming both would refuse.
		decl := declared()
		var empty, derived []string
		for _, name := range slices.Sorted(maps.Keys(sc.tables)) {
			switch d, ok := decl[name]; {
			case ok && d.Policy == Internal:
			case ok && d.Policy == Derived:
				derived = append(derived, name)
			default:
				empty = append(empty, name)
			}
		}
		if err := db.BackupTruncate(ctx, tx, empty); err != nil {
			return fmt.Errorf("empty the tables: %w", err)
		}
		if err := db.BackupTruncate(ctx, tx, derived); err != nil {
			return fmt.Errorf("empty the derived tables: %w", err)
		}
		var batch []json.RawMessage
		var cur payloadTable
		flush := func() error {
			if len(batch) == 0 {
				return nil
			}
			n, err := db.BackupInsert(ctx, tx, cur.Name, cur.Columns, batch)
			if err != nil {
				return fmt.Errorf("restore %s: %w", cur.Name, err)
			}
			res.Rows[cur.Name] += n
			batch = batch[:0]
			return nil
		}
		err = o.walk(func(t payloadTable) error {
			if err := flush(); err != nil {
				return err
			}
			cur = t
			res.Rows[t.Name] = 0
			return nil
		}, func(_ payloadTable, row json.RawMessage) error {
			batch = append(batch, slices.Clone(row))
			if len(batch) >= insertBatch {
				return flush()
			}
			return nil
		}, func(string, []byte) error { return nil })
		if err != nil {
			return err
		}
		if err := flush(); err != nil {
			return err
		}
		for name := range res.Rows {
			for _, c := range sc.order[name] {
				if sc.tables[name][c].sequenced {
					if err := db.BackupResetSequence(ctx, tx, name, c); err != nil {
						return fmt.Errorf("sequence of %s.%s: %w", name, c, err)
					}
				}
			}
		}
		return nil
	})
	if err != nil {
		var ce *cairn.Error
		if errors.As(err, &ce) {
			return Result{}, err
		}
		return Result{}, fmt.Errorf("restore %s: %w", id, err)
	}
	return res, nil
}

func newID() string {
	b := make([]byte, 12)
	if _, err := rand.Read(b); err != nil {
		panic("backup: crypto/rand failed: " + err.Error())
	}
	return hex.EncodeToString(b)
}

// RestoreFiles writes the files o carries (the local CA) into this
// Engine's TLS directory, and removes the server certificate so the next
// start issues one from the restored CA. passphrase opens them as it
// opened the file ("": this Engine's held cipher). It answers the files
// written; none when this Engine keeps no local CA (a provided
// certificate) or the backup carries none.
func (s *Service) RestoreFiles(o *Opened, passphrase string) ([]string, error) {
	if s.tlsDir == "" {
		return []string{}, nil
	}
	contents := map[string][]byte{}
	err := o.walk(func(payloadTable) error { return nil }, func(payloadTable, json.RawMessage) error { return nil },
		func(id string, sealed []byte) error {
			if _, ok := files[id]; !ok {
				return cairn.Errorf(ECodeUnsupported, "file %q is not one this Engine restores", id)
			}
			var plain []byte
			var err error
			if passphrase != "" {
				plain, err = aegis.OpenWithPassphrase(passphrase, o.state, sealed, fileAAD(id))
			} else {
				plain, err = s.cipher.Open(sealed, fileAAD(id))
			}
			if err != nil {
				return malformed("file " + id + " does not open")
			}
			contents[id] = plain
			return nil
		})
	if err != nil {
		return nil, err
	}
	if len(contents) == 0 {
		return []string{}, nil
	}
	if _, err := tls.X509KeyPair(contents["tls/ca.pem"], contents["tls/ca-key.pem"]); err != nil {
		return nil, malformed("the backup's local CA is not a certificate and its key")
	}
	if err := os.MkdirAll(s.tlsDir, 0o700); err != nil {
		return nil, err
	}
	written := []string{}
	for _, id := range slices.Sorted(maps.Keys(contents)) {
		f := files[id]
		if err := writeAtomic(filepath.Join(s.tlsDir, f.name), contents[id], f.mode); err != nil {
			return nil, err
		}
		written = append(written, id)
	}
	for _, name := range []string{"server.pem", "server-key.pem"} {
		if err := os.Remove(filepath.Join(s.tlsDir, name)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, err
		}
	}
	return written, nil
}

func writeAtomic(path string, data []byte, mode os.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".restore-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
