package logs_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn/internal/logs"
)

// setupLogDir is a log directory with source "engine" written through the
// file sink and stderr discarded.
func setupLogDir(t *testing.T) (dir string, log *slog.Logger) {
	t.Helper()
	dir = filepath.Join(t.TempDir(), "logs")
	f, err := logs.OpenFile(logs.FileOptions{Dir: dir, Source: "engine"})
	require.NoError(t, err)
	t.Cleanup(func() { f.Close() })
	return dir, logs.NewTee(discard{}, logs.FormatText, slog.LevelDebug, f)
}

type discard struct{}

func (discard) Write(b []byte) (int, error) { return len(b), nil }

func TestReadFiltersAndRedacts(t *testing.T) {
	t.Parallel()
	dir, log := setupLogDir(t)
	pat := "cairn_pat_0123456789abcdefghijklmnop"
	log.Debug("cache warm", "n", 1)
	log.Info("device connected", "device_guid", "g-1")
	log.Warn("token refresh refused "+pat, "refresh_token", "rt-secret-value-1")
	log.Error("database unreachable", "err", "dial tcp: refused")
	// A line some other writer put there, unredacted: still served redacted.
	raw := fmt.Sprintf(`{"time":%q,"level":"INFO","msg":"raw line","password":"hunter2-raw","nested":{"session_cookie":"c00kie"},"note":"%s"}`+"\n",
		time.Now().UTC().Format(time.RFC3339Nano), pat)
	fh, err := os.OpenFile(filepath.Join(dir, "engine.log"), os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = fh.WriteString(raw + "not json at all\n")
	require.NoError(t, err)
	require.NoError(t, fh.Close())

	all, err := logs.Read(dir, "engine", logs.Query{})
	require.NoError(t, err)
	require.Len(t, all.Entries, 5)
	require.Equal(t, "cache warm", all.Entries[0].Message, "oldest first")
	body, _ := json.Marshal(all)
	for _, secret := range []string{pat, "rt-secret-value-1", "hunter2-raw", "c00kie"} {
		require.NotContains(t, string(body), secret)
	}
	require.False(t, all.Truncated)

	cases := []struct {
		name string
		q    logs.Query
		want []string
	}{
		{"level warn and above", logs.Query{HasLevel: true, MinLevel: slog.LevelWarn}, []string{"token refresh refused [redacted]", "database unreachable"}},
		{"text in an attribute", logs.Query{Text: "G-1"}, []string{"device connected"}},
		{"text never matches a secret", logs.Query{Text: "hunter2"}, nil},
		{"limit keeps the newest", logs.Query{Limit: 2}, []string{"database unreachable", "raw line"}},
		{"until before everything", logs.Query{Until: time.Now().Add(-time.Hour)}, nil},
		{"since after everything", logs.Query{Since: time.Now().Add(time.Hour)}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res, err := logs.Read(dir, "engine", c.q)
			require.NoError(t, err)
			var got []string
			for _, e := range res.Entries {
				got = append(got, e.Message)
			}
			require.Equal(t, c.want, got)
		})
	}

	_, err = logs.Read(dir, "nope", logs.Query{})
	require.ErrorIs(t, err, logs.ErrNoSource)
	_, err = logs.Read(dir, "../etc", logs.Query{})
	require.ErrorIs(t, err, logs.ErrNoSource)
	src, err := logs.Sources(dir)
	require.NoError(t, err)
	require.Len(t, src, 1)
	require.Equal(t, "engine", src[0].Name)
}

func TestReadIsBoundedAndSpansRotatedFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	line := func(i int) string {
		return fmt.Sprintf(`{"time":"2026-11-29T06:%02d:00Z","level":"INFO","msg":"line %d","pad":%q}`+"\n", i%60, i, strings.Repeat("x", 100))
	}
	var older, newer strings.Builder
	for i := range 50 {
		older.WriteString(line(i))
	}
	for i := 50; i < 100; i++ {
		newer.WriteString(line(i))
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "engine-2026-11-29T06-00-00.000.log"), []byte(older.String()), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "engine.log"), []byte(newer.String()), 0o600))

	res, err := logs.Read(dir, "engine", logs.Query{Limit: 1000})
	require.NoError(t, err)
	require.Len(t, res.Entries, 100)
	require.Equal(t, "line 0", res.Entries[0].Message)
	require.Equal(t, "line 99", res.Entries[99].Message)

	// A budget of about ten lines: ten entries (or nine), truncated.
	res, err = logs.Read(dir, "engine", logs.Query{Limit: 1000, MaxScan: int64(10 * len(line(0)))})
	require.NoError(t, err)
	require.True(t, res.Truncated)
	require.LessOrEqual(t, len(res.Entries), 10)
	require.Equal(t, "line 99", res.Entries[len(res.Entries)-1].Message)
	require.LessOrEqual(t, res.ScannedBytes, int64(10*len(line(0))))

	src, err := logs.Sources(dir)
	require.NoError(t, err)
	require.Equal(t, 2, src[0].Files)
}

func TestFollowSendsNewMatchingLines(t *testing.T) {
	t.Parallel()
	dir, log := setupLogDir(t)
	log.Info("before the follow")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var mu sync.Mutex
	var got []logs.Entry
	done := make(chan error, 1)
	started := make(chan struct{})
	var once sync.Once
	go func() {
		done <- logs.Follow(ctx, dir, "engine", logs.Query{HasLevel: true, MinLevel: slog.LevelWarn}, func(e logs.Entry) error {
			mu.Lock()
			defer mu.Unlock()
			got = append(got, e)
			return nil
		}, func() error { once.Do(func() { close(started) }); return nil })
	}()
	<-started
	log.Info("quiet")
	log.Warn("loud", "password", "s3cret-follow")
	require.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(got) == 1
	}, 30*time.Second, 20*time.Millisecond)
	cancel()
	require.NoError(t, <-done)
	require.Equal(t, "loud", got[0].Message)
	require.Equal(t, logs.Redacted, got[0].Attrs["password"])
}
