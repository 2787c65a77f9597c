package workers_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/db"
	"github.com/cairn-rmm/cairn/internal/aegis"
	"github.com/cairn-rmm/cairn/internal/authtest"
	"github.com/cairn-rmm/cairn/internal/payloadkeys"
	"github.com/cairn-rmm/cairn/internal/pgtest"
	"github.com/cairn-rmm/cairn/workers"
)

const codecPass = "correct horse battery staple"

type codecFixture struct {
	store  *db.Store
	cipher *aegis.Cipher
	codec  *workers.PayloadCodec
	dc     converter.DataConverter
	// replica is another process of the deployment, unlocked with pass.
	replica func(pass string) *workers.PayloadCodec
}

func codecSetup(t testing.TB) codecFixture {
	t.Helper()
	store := pgtest.NewDB(t)
	cipher := func() *aegis.Cipher {
		c := aegis.New(aegis.PGStore{Q: store.Queries, S: store}, authtest.CheapKDF)
		c.Register(payloadkeys.SealedColumns()...)
		return c
	}
	c := cipher()
	require.NoError(t, c.Setup(context.Background(), codecPass))
	codec := workers.NewPayloadCodec(payloadkeys.New(store.Queries, c))
	return codecFixture{store: store, cipher: c, codec: codec, dc: workers.DataConverter(codec),
		replica: func(pass string) *workers.PayloadCodec {
			other := cipher()
			require.NoError(t, other.Unlock(context.Background(), pass))
			return workers.NewPayloadCodec(payloadkeys.New(store.Queries, other))
		}}
}

// What the Engine writes to Temporal is ciphertext, and another replica
// of the deployment reads it (issue 21 item 1).
func TestPayloadsAreSealed(t *testing.T) {
	t.Parallel()
	f := codecSetup(t)
	secret := map[string]string{"content": "root:$6$secret-hash:19000:0:99999:7:::"}
	p, err := f.dc.ToPayload(secret)
	require.NoError(t, err)
	require.Equal(t, workers.EncodingEncrypted, string(p.Metadata[converter.MetadataEncoding]))
	require.NotEmpty(t, p.Metadata[workers.MetadataKeyID])
	require.NotContains(t, string(p.Data), "secret-hash")

	var back map[string]string
	require.NoError(t, workers.DataConverter(f.replica(codecPass)).FromPayload(p, &back))
	require.Equal(t, secret, back)

	// A payload written before encryption (an older history) reads as is.
	plain, err := converter.GetDefaultDataConverter().ToPayload("plain")
	require.NoError(t, err)
	var s string
	require.NoError(t, f.dc.FromPayload(plain, &s))
	require.Equal(t, "plain", s)

	// A flipped bit is refused, not misread.
	p.Data[len(p.Data)-1] ^= 1
	_, err = f.codec.Decode([]*commonpb.Payload{p})
	require.Error(t, err)
}

// A rotation of the master cipher starts a new payload key and keeps the
// old one readable for the histories it sealed.
func TestPayloadKeyRotation(t *testing.T) {
	t.Parallel()
	f := codecSetup(t)
	ctx := context.Background()
	before, err := f.dc.ToPayload("before the rotation")
	require.NoError(t, err)
	require.NoError(t, f.cipher.Rotate(ctx, codecPass, codecPass+" 2"))
	after, err := f.dc.ToPayload("after the rotation")
	require.NoError(t, err)
	require.NotEqual(t, string(before.Metadata[workers.MetadataKeyID]), string(after.Metadata[workers.MetadataKeyID]))

	// A replica unlocked with the new passphrase reads both.
	fresh := f.replica(codecPass + " 2")
	for want, p := range map[string]*commonpb.Payload{"before the rotation": before, "after the rotation": after} {
		var got string
		require.NoError(t, workers.DataConverter(fresh).FromPayload(p, &got))
		require.Equal(t, want, got)
	}
}

// A process without the cipher neither writes nor reads payloads: it
// fails (and Temporal retries the task elsewhere or later) rather than
// writing plaintext.
func TestPayloadsNeedTheCipher(t *testing.T) {
	t.Parallel()
	f := codecSetup(t)
	p, err := f.dc.ToPayload("sealed")
	require.NoError(t, err)
	f.cipher.Lock()
	locked := workers.NewPayloadCodec(payloadkeys.New(f.store.Queries, f.cipher))
	_, err = locked.Encode([]*commonpb.Payload{p})
	require.True(t, cairn.IsCode(err, cairn.ECodeAegisLocked), "%v", err)
	_, err = locked.Decode([]*commonpb.Payload{p})
	require.True(t, cairn.IsCode(err, cairn.ECodeAegisLocked), "%v", err)
}

// BenchmarkPayloadCodec is the codec's cost for one payload the size of a
// file-write request: seal on one side, open on the other (what one
// payload of a DeviceOperation costs the Engine; docs/benchmarks.md
// "Temporal payload codec").
func BenchmarkPayloadCodec(b *testing.B) {
	f := codecSetup(b)
	payload := map[string]any{"action": "write_text", "path": "/etc/motd", "content": strings.Repeat("x", 1024)}
	p, err := converter.GetDefaultDataConverter().ToPayload(payload)
	require.NoError(b, err)
	in := []*commonpb.Payload{p}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		sealed, err := f.codec.Encode(in)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := f.codec.Decode(sealed); err != nil {
			b.Fatal(err)
		}
	}
}

// A failure's message is sealed like any payload; a process that cannot
// seal reports the failure's type with a fixed message, never the text.
func TestFailureMessagesAreSealed(t *testing.T) {
	t.Parallel()
	f := codecSetup(t)
	fc := workers.FailureConverter(f.dc)
	err := temporal.NewNonRetryableApplicationError("the agent said: root:$6$secret-hash", "op_failed", nil)
	sealed := fc.ErrorToFailure(err)
	require.NotContains(t, sealed.String(), "secret-hash")
	var app *temporal.ApplicationError
	require.ErrorAs(t, fc.FailureToError(sealed), &app)
	require.Equal(t, "op_failed", app.Type())
	require.Contains(t, app.Message(), "secret-hash")

	f.cipher.Lock()
	locked := workers.FailureConverter(workers.DataConverter(workers.NewPayloadCodec(payloadkeys.New(f.store.Queries, f.cipher))))
	plain := locked.ErrorToFailure(err)
	require.NotContains(t, plain.String(), "secret-hash")
	require.ErrorAs(t, locked.FailureToError(plain), &app)
	require.Equal(t, "op_failed", app.Type())
}
