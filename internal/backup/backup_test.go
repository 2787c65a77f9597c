package backup

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/db"
	"github.com/cairn-rmm/cairn/internal/aegis"
	"github.com/cairn-rmm/cairn/internal/pgtest"
	"github.com/cairn-rmm/cairn/internal/tlsca"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

const passphrase = "backup test passphrase"

var cheap = aegis.KDFParams{Time: 1, MemoryKiB: 1024, Threads: 1}

type engine struct {
	store  *db.Store
	cipher *aegis.Cipher
	svc    *Service
}

// newEngine is a database with a cipher (set up when configured).
func newEngine(t *testing.T, configured bool) *engine { return newEngineTB(t, configured) }

func newEngineTB(t testing.TB, configured bool) *engine {
	t.Helper()
	store := pgtest.NewDB(t)
	c := aegis.New(aegis.PGStore{Q: store.Queries, S: store}, cheap)
	if configured {
		require.NoError(t, c.Setup(context.Background(), passphrase))
	}
	return &engine{store: store, cipher: c, svc: New(store, c, nil)}
}

type fixture struct {
	src    *engine
	guid   string
	latest []byte // the newest active refresh token's hash
}

// setup is a populated source Engine: a site, an operator with a session
// and a saved view (excluded), a device with three refresh tokens (one
// used, two active).
func setup(t *testing.T) *fixture {
	t.Helper()
	ctx := context.Background()
	e := newEngine(t, true)
	q := e.store.Queries
	site, err := q.SiteInsert(ctx, db.SiteInsertParams{Name: "Backup site", Slug: "backup-site"})
	require.NoError(t, err)
	sealed, err := e.cipher.Seal([]byte("hash"), []byte("user-password:x"))
	require.NoError(t, err)
	user, err := q.UserInsert(ctx, db.UserInsertParams{Username: "alice", Role: "admin", PasswordSealed: sealed, Activated: true})
	require.NoError(t, err)
	_, err = q.SessionInsert(ctx, db.SessionInsertParams{TokenHash: hash("session"), CsrfHash: hash("csrf"), UserID: user.ID,
		LastSeenAt: time.Now(), ExpiresAt: time.Now().Add(time.Hour)})
	require.NoError(t, err)
	_, err = q.DeviceListViewInsert(ctx, db.DeviceListViewInsertParams{OwnerID: user.ID, Name: "mine", Columns: []string{"hostname"}, Tree: []byte(`{}`)})
	require.NoError(t, err)
	guid := "11111111-2222-3333-4444-555555555555"
	_, err = q.DeviceInsert(ctx, db.DeviceInsertParams{Guid: cairn.DeviceGUID(guid), Hostname: "backup-host", SiteID: site.ID})
	require.NoError(t, err)
	for _, tok := range []string{"used", "older", "newest"} {
		require.NoError(t, q.RefreshTokenInsert(ctx, db.RefreshTokenInsertParams{TokenHash: hash(tok), DeviceGuid: cairn.DeviceGUID(guid), FamilyID: "f",
			ExpiresAt: time.Now().Add(24 * time.Hour)}))
		// The next token must be newer (created_at is now() of its own
		// transaction): wait until the clock has passed this one's.
		row, err := q.RefreshTokenGet(ctx, hash(tok))
		require.NoError(t, err)
		require.Eventually(t, func() bool { return time.Now().After(row.CreatedAt) }, time.Minute, time.Millisecond)
	}
	n, err := q.RefreshTokenMarkUsed(ctx, db.RefreshTokenMarkUsedParams{TokenHash: hash("used"), Now: new(time.Now())})
	require.NoError(t, err)
	require.EqualValues(t, 1, n)
	return &fixture{src: e, guid: guid, latest: hash("newest")}
}

func hash(s string) []byte { h := sha256.Sum256([]byte(s)); return h[:] }

// dump is every row of the exported tables (refresh tokens filtered as
// the export does), as JSON text per table.
func dump(t *testing.T, s *db.Store, policy Policy) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	ctx := context.Background()
	eng := New(s, nil, nil)
	require.NoError(t, s.BackupSnapshot(ctx, func(tx pgx.Tx) error {
		sc, err := eng.schema(ctx, db.New(tx))
		if err != nil {
			return err
		}
		for _, tb := range Tables {
			if tb.Policy != policy {
				continue
			}
			rows := []string{}
			if err := db.BackupRows(ctx, tx, tb.Name, sc.writable(tb.Name), tb.Filter, func(r []byte) error {
				rows = append(rows, string(r))
				return nil
			}); err != nil {
				return err
			}
			slices.Sort(rows)
			out[tb.Name] = rows
		}
		return nil
	}))
	return out
}

func export(t *testing.T, e *engine) []byte {
	t.Helper()
	var buf bytes.Buffer
	require.NoError(t, e.svc.Export(context.Background(), &buf))
	return buf.Bytes()
}

// The declared table list covers the running schema exactly.
func TestBackupDeclaresEveryTable(t *testing.T) {
	t.Parallel()
	e := newEngine(t, false)
	sc, err := e.svc.schema(context.Background(), e.store.Queries)
	require.NoError(t, err)
	decl := declared()
	require.Len(t, decl, len(Tables), "a table declared twice")
	for name := range sc.tables {
		_, ok := decl[name]
		require.True(t, ok, "table %s is not declared in internal/backup.Tables: say whether backups carry it", name)
	}
	for name := range decl {
		require.NotNil(t, sc.tables[name], "declared table %s is not in the schema", name)
	}
	_, err = sc.exportOrder()
	require.NoError(t, err)
}

// Export writes the envelope SPEC rule 1 names; the payload is sealed
// (nothing readable in the file), and holds what rule 4 lists.
func TestExportIsAnEncryptedEnvelope(t *testing.T) {
	t.Parallel()
	f := setup(t)
	file := export(t, f.src)
	var env map[string]any
	require.NoError(t, json.Unmarshal(file, &env))
	for _, k := range []string{"kind", "schema_version", "kdf_params", "nonce_b64", "ciphertext_b64"} {
		require.Contains(t, env, k)
	}
	require.Equal(t, Kind, env["kind"])
	require.Equal(t, "AES-256-GCM", env["cipher"])
	require.EqualValues(t, SchemaVersion(), env["schema_version"])
	require.NotContains(t, string(file), "backup-host")
	require.NotContains(t, string(file), "alice")

	// The locked cipher cannot export.
	f.src.cipher.Lock()
	require.True(t, cairn.IsCode(f.src.svc.Export(context.Background(), &bytes.Buffer{}), cairn.ECodeAegisLocked))
}

// Analyze changes nothing and counts what a restore imports: only the
// newest active refresh token, no sessions or saved views.
func TestAnalyzeCountsAndChangesNothing(t *testing.T) {
	t.Parallel()
	f := setup(t)
	file := export(t, f.src)
	before := dump(t, f.src.store, Export)
	fresh := newEngine(t, false)
	o, err := fresh.svc.Open(bytes.NewReader(file), passphrase)
	require.NoError(t, err)
	rep, err := fresh.svc.Analyze(context.Background(), o)
	require.NoError(t, err)
	require.True(t, rep.Restorable, "%v", rep.Problems)
	counts := map[string]int64{}
	for _, tr := range rep.Tables {
		counts[tr.Name] = tr.Rows
		require.Empty(t, tr.MissingColumns)
		require.Empty(t, tr.NewColumns)
	}
	require.EqualValues(t, 1, counts["devices"])
	require.EqualValues(t, 1, counts["refresh_tokens"], "only the newest active refresh token")
	require.EqualValues(t, 1, counts["sites"])
	require.EqualValues(t, 1, counts["users"])
	require.EqualValues(t, 1, counts["aegis_state"])
	require.NotContains(t, counts, "sessions")
	require.NotContains(t, counts, "device_list_views")
	require.Equal(t, before, dump(t, f.src.store, Export))
	require.Empty(t, dump(t, fresh.store, Export)["users"], "analyze wrote nothing")
}

// Restore onto a fresh database: the exported rows are equal, the
// excluded ones empty, the cipher state the source's (the source
// passphrase unlocks it).
func TestRestoreOntoAFreshDatabase(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := setup(t)
	file := export(t, f.src)
	want := dump(t, f.src.store, Export)

	fresh := newEngine(t, false)
	o, err := fresh.svc.Open(bytes.NewReader(file), passphrase)
	require.NoError(t, err)
	id, _, err := fresh.svc.Stage(ctx, o, "test")
	require.NoError(t, err)
	res, err := fresh.svc.Apply(ctx, id)
	require.NoError(t, err)
	require.True(t, res.Applied)
	require.EqualValues(t, 1, res.Rows["refresh_tokens"])
	require.Equal(t, want, dump(t, fresh.store, Export))
	tok, err := fresh.store.Queries.RefreshTokenGet(ctx, f.latest)
	require.NoError(t, err)
	require.Equal(t, cairn.DeviceGUID(f.guid), tok.DeviceGuid)

	// Applying again is a no-op (a retried activity after its commit).
	again, err := fresh.svc.Apply(ctx, id)
	require.NoError(t, err)
	require.False(t, again.Applied)

	// The restored cipher is the source's: its passphrase unlocks it and
	// opens what the source sealed.
	c := aegis.New(aegis.PGStore{Q: fresh.store.Queries, S: fresh.store}, cheap)
	require.NoError(t, c.Unlock(ctx, passphrase))
	user, err := fresh.store.Queries.UserGetByUsername(ctx, "alice")
	require.NoError(t, err)
	plain, err := c.Open(user.PasswordSealed, []byte("user-password:x"))
	require.NoError(t, err)
	require.Equal(t, "hash", string(plain))

	// New rows get IDs past the restored ones.
	site, err := fresh.store.Queries.SiteInsert(ctx, db.SiteInsertParams{Name: "After", Slug: "after"})
	require.NoError(t, err)
	require.Greater(t, site.ID, int64(1))
}

// Restore onto the running Engine does not merge: what was added after
// the export is gone, sessions and saved views are cleared, and the
// unlocked cipher opens the file without a passphrase.
func TestRestoreReplacesWithoutMerging(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := setup(t)
	file := export(t, f.src)
	want := dump(t, f.src.store, Export)
	_, err := f.src.store.Queries.SiteInsert(ctx, db.SiteInsertParams{Name: "Later", Slug: "later"})
	require.NoError(t, err)

	o, err := f.src.svc.Open(bytes.NewReader(file), "")
	require.NoError(t, err)
	id, _, err := f.src.svc.Stage(ctx, o, "test")
	require.NoError(t, err)
	_, err = f.src.svc.Apply(ctx, id)
	require.NoError(t, err)
	require.Equal(t, want, dump(t, f.src.store, Export))
	for name, rows := range dump(t, f.src.store, Exclude) {
		require.Empty(t, rows, "excluded table %s after restore", name)
	}
}

// A restore that fails part-way leaves every table as it was and the
// staged backup in place (one transaction).
func TestRestoreFailingMidwayChangesNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := setup(t)
	key, _, err := f.src.cipher.BackupKey(ctx)
	require.NoError(t, err)
	file := export(t, f.src)
	// The same payload with a device whose site does not exist, late in
	// the stream (after users, sites and the cipher were inserted).
	file = rewrite(t, f.src, key, file, func(p map[string]any) {
		for _, tb := range p["tables"].([]any) {
			m := tb.(map[string]any)
			if m["name"] == "devices" {
				row := m["rows"].([]any)[0].(map[string]any)
				clone := map[string]any{}
				for k, v := range row {
					clone[k] = v
				}
				clone["guid"], clone["site_id"] = "99999999-2222-3333-4444-555555555555", 999
				m["rows"] = append(m["rows"].([]any), clone)
			}
		}
	})
	before := dump(t, f.src.store, Export)
	excludedBefore := dump(t, f.src.store, Exclude)
	o, err := f.src.svc.Open(bytes.NewReader(file), passphrase)
	require.NoError(t, err)
	id, _, err := f.src.svc.Stage(ctx, o, "test")
	require.NoError(t, err)
	_, err = f.src.svc.Apply(ctx, id)
	require.Error(t, err)
	require.Equal(t, before, dump(t, f.src.store, Export))
	require.Equal(t, excludedBefore, dump(t, f.src.store, Exclude), "sessions and views untouched")
	_, err = f.src.store.Queries.BackupRestoreGet(ctx, id)
	require.NoError(t, err, "the staged backup is still there")
}

// rewrite decrypts file, lets edit change its payload, and seals it again
// with the same key and envelope.
func rewrite(t *testing.T, e *engine, key, file []byte, edit func(map[string]any)) []byte {
	t.Helper()
	env, ct, err := readEnvelope(bytes.NewReader(file))
	require.NoError(t, err)
	plain, err := env.open(key, ct)
	require.NoError(t, err)
	zr, err := gzip.NewReader(bytes.NewReader(plain))
	require.NoError(t, err)
	var p map[string]any
	require.NoError(t, json.NewDecoder(zr).Decode(&p))
	edit(p)
	raw, err := json.Marshal(p)
	require.NoError(t, err)
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	_, _ = zw.Write(raw)
	require.NoError(t, zw.Close())
	var out bytes.Buffer
	require.NoError(t, writeEnvelope(&out, *env, key, buf.Bytes()))
	return out.Bytes()
}

// Every refusal of rule 3, on analyze's path (restore stages through it).
func TestRefusals(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := setup(t)
	key, _, err := f.src.cipher.BackupKey(ctx)
	require.NoError(t, err)
	file := export(t, f.src)
	other := newEngine(t, true) // another Engine with its own cipher

	editEnvelope := func(edit func(map[string]any)) []byte {
		var env map[string]any
		require.NoError(t, json.Unmarshal(file, &env))
		edit(env)
		b, _ := json.Marshal(env)
		return b
	}
	cases := []struct {
		name       string
		eng        *engine
		file       []byte
		passphrase string
		code       string
		problem    string
	}{
		{name: "not JSON", eng: other, file: []byte("PK\x03\x04 zip"), passphrase: passphrase, code: ECodeMalformed},
		{name: "another kind", eng: other, file: editEnvelope(func(m map[string]any) { m["kind"] = "pg_dump" }), passphrase: passphrase, code: ECodeMalformed},
		{name: "unknown field", eng: other, file: editEnvelope(func(m map[string]any) { m["extra"] = 1 }), passphrase: passphrase, code: ECodeMalformed},
		{name: "bad base64", eng: other, file: editEnvelope(func(m map[string]any) { m["ciphertext_b64"] = "!!" }), passphrase: passphrase, code: ECodeMalformed},
		{name: "wrong passphrase", eng: other, file: file, passphrase: "not the source passphrase", code: ECodeWrongCipher},
		{name: "another Engine's cipher", eng: other, file: file, code: ECodeWrongCipher},
		{name: "edited header", eng: other, file: editEnvelope(func(m map[string]any) { m["schema_version"] = 1 }), passphrase: passphrase, code: ECodeWrongCipher},
		{name: "flipped ciphertext", eng: other, file: editEnvelope(func(m map[string]any) {
			s := m["ciphertext_b64"].(string)
			m["ciphertext_b64"] = "A" + s[1:]
			if s[0] == 'A' {
				m["ciphertext_b64"] = "B" + s[1:]
			}
		}), passphrase: passphrase, code: ECodeWrongCipher},
		{name: "unknown table", eng: other, passphrase: passphrase, code: ECodeUnsupported, problem: "table sessions_2 is not one this Engine restores",
			file: rewrite(t, f.src, key, file, func(p map[string]any) {
				p["tables"] = append(p["tables"].([]any), map[string]any{"name": "sessions_2", "columns": []string{"a"}, "rows": []any{}})
			})},
		{name: "excluded table", eng: other, passphrase: passphrase, code: ECodeUnsupported, problem: "table sessions is not one this Engine restores",
			file: rewrite(t, f.src, key, file, func(p map[string]any) {
				p["tables"] = append(p["tables"].([]any), map[string]any{"name": "sessions", "columns": []string{"token_hash"}, "rows": []any{}})
			})},
		{name: "unknown file", eng: other, passphrase: passphrase, code: ECodeUnsupported, problem: `file "etc/shadow" is not one this Engine restores`,
			file: rewrite(t, f.src, key, file, func(p map[string]any) {
				p["files"] = []any{map[string]any{"id": "etc/shadow", "sealed_b64": ""}}
			})},
		{name: "column absent from the running schema", eng: other, passphrase: passphrase, code: ECodeUnsupported,
			problem: "column sites.region is not in the running schema",
			file: rewrite(t, f.src, key, file, func(p map[string]any) {
				for _, tb := range p["tables"].([]any) {
					if m := tb.(map[string]any); m["name"] == "sites" {
						m["columns"] = append(m["columns"].([]any), "region")
						m["rows"].([]any)[0].(map[string]any)["region"] = "eu"
					}
				}
			})},
		{name: "row with a column its table lacks", eng: other, passphrase: passphrase, code: ECodeMalformed,
			file: rewrite(t, f.src, key, file, func(p map[string]any) {
				for _, tb := range p["tables"].([]any) {
					if m := tb.(map[string]any); m["name"] == "sites" {
						m["rows"].([]any)[0].(map[string]any)["region"] = "eu"
					}
				}
			})},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o, err := tc.eng.svc.Open(bytes.NewReader(tc.file), tc.passphrase)
			if err == nil {
				var rep *Report
				rep, err = tc.eng.svc.Analyze(ctx, o)
				if err == nil {
					require.False(t, rep.Restorable)
					require.Contains(t, rep.Problems, tc.problem)
					_, _, err = tc.eng.svc.Stage(ctx, o, "test")
				}
			}
			require.Error(t, err)
			require.Equal(t, tc.code, cairn.ErrorCode(err), "%v", err)
			require.NotContains(t, err.Error(), passphrase)
			require.Empty(t, dump(t, tc.eng.store, Export)["sites"], "nothing restored")
		})
	}
}

// A backup from a newer schema: analyze reports the columns this Engine
// lacks; restore refuses it.
func TestAnalyzeReportsANewerSchema(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := setup(t)
	key, _, err := f.src.cipher.BackupKey(ctx)
	require.NoError(t, err)
	file := rewrite(t, f.src, key, export(t, f.src), func(p map[string]any) {
		for _, tb := range p["tables"].([]any) {
			if m := tb.(map[string]any); m["name"] == "devices" {
				m["columns"] = append(m["columns"].([]any), "tpm_attestation")
			}
		}
	})
	o, err := f.src.svc.Open(bytes.NewReader(file), "")
	require.NoError(t, err)
	rep, err := f.src.svc.Analyze(ctx, o)
	require.NoError(t, err)
	require.False(t, rep.Restorable)
	for _, tr := range rep.Tables {
		if tr.Name == "devices" {
			require.Equal(t, []string{"tpm_attestation"}, tr.MissingColumns)
		}
	}
	require.True(t, strings.Contains(strings.Join(rep.Problems, ";"), "devices.tpm_attestation"))
}

// The local CA travels sealed inside the payload and is written back into
// the restoring Engine's TLS directory, whose next start issues a server
// certificate from it (agents pin the CA).
func TestLocalCATravelsWithTheBackup(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := setup(t)
	srcDir := filepath.Join(t.TempDir(), "tls")
	srcCA, err := tlsca.Load(tlsca.Options{Dir: srcDir})
	require.NoError(t, err)
	f.src.svc.SetLocalCA(srcCA.LocalCADir())
	file := export(t, f.src)
	key, err := os.ReadFile(filepath.Join(srcDir, "ca-key.pem"))
	require.NoError(t, err)
	require.NotContains(t, string(file), "PRIVATE KEY")

	dstDir := filepath.Join(t.TempDir(), "tls")
	dstCA, err := tlsca.Load(tlsca.Options{Dir: dstDir})
	require.NoError(t, err)
	require.NotEqual(t, srcCA.CAPEM(), dstCA.CAPEM())
	fresh := newEngine(t, false)
	fresh.svc.SetLocalCA(dstCA.LocalCADir())
	o, err := fresh.svc.Open(bytes.NewReader(file), passphrase)
	require.NoError(t, err)
	rep, err := fresh.svc.Analyze(ctx, o)
	require.NoError(t, err)
	require.Equal(t, []string{"tls/ca-key.pem", "tls/ca.pem"}, rep.Files)
	written, err := fresh.svc.RestoreFiles(o, passphrase)
	require.NoError(t, err)
	require.Equal(t, []string{"tls/ca-key.pem", "tls/ca.pem"}, written)
	got, err := os.ReadFile(filepath.Join(dstDir, "ca-key.pem"))
	require.NoError(t, err)
	require.Equal(t, key, got)
	st, err := os.Stat(filepath.Join(dstDir, "ca-key.pem"))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), st.Mode().Perm())
	require.NoFileExists(t, filepath.Join(dstDir, "server.pem"))
	again, err := tlsca.Load(tlsca.Options{Dir: dstDir})
	require.NoError(t, err)
	require.Equal(t, srcCA.CAPEM(), again.CAPEM(), "the next start serves from the restored CA")

	// A provided certificate: nothing to carry.
	var none *tlsca.Manager
	require.Empty(t, none.LocalCADir())
}
