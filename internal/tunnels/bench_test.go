package tunnels_test

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/agent/proto/wgnet"
	"github.com/cairn-rmm/cairn/internal/tunnels"
)

// BenchmarkTunnelThroughput is the Engine's WireGuard throughput (issue
// 23's bench; docs/benchmarks.md "Remote desktop"): one TCP stream from
// the Engine's user-space device (tunnels.Server.Dial, the gateway's
// path) to a user-space agent peer over loopback UDP, which discards
// what it reads. Both ends run in this process, so the figure is a lower
// bound for the Engine's side alone. Run with
// `go test -run '^$' -bench TunnelThroughput -benchtime 512x ./internal/tunnels/`
// (GOMAXPROCS=1 for "one core"); b.SetBytes makes it report MB/s.
func BenchmarkTunnelThroughput(b *testing.B) {
	ctx := context.Background()
	f := setup(b, tunnels.Config{})
	id := f.device(b, "guid-bench")
	key, err := wgnet.GenerateKey()
	require.NoError(b, err)
	ens, err := f.svc.Ensure(ctx, id, proto.VPNEnsureRequest{PublicKey: key.Public().String()})
	require.NoError(b, err)
	srv := tunnels.NewServer(f.svc, "replica-bench", f.cipher.Unlocked, nil)
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); srv.Run(runCtx) }()
	b.Cleanup(func() { stop(); <-done })

	agent := agentPeer(b, key, ens)
	l, err := agent.ListenTCP(9000)
	require.NoError(b, err)
	defer l.Close()
	read := make(chan int64, 1)
	go func() {
		c, err := l.Accept()
		if err != nil {
			read <- 0
			return
		}
		n, _ := io.Copy(io.Discard, c)
		read <- n
	}()
	var c io.WriteCloser
	require.Eventually(b, func() bool {
		conn, err := srv.Dial(ctx, id.GUID, 9000)
		if err != nil {
			return false
		}
		c = conn
		return true
	}, time.Minute, 100*time.Millisecond)

	chunk := make([]byte, 64<<10)
	b.SetBytes(int64(len(chunk)))
	b.ResetTimer()
	for range b.N {
		_, err := c.Write(chunk)
		require.NoError(b, err)
	}
	require.NoError(b, c.Close())
	n := <-read
	b.StopTimer()
	require.Equal(b, int64(b.N)*int64(len(chunk)), n, "every byte crossed the tunnel")
	b.ReportMetric(float64(n)*8/1e6/b.Elapsed().Seconds(), "Mbit/s")
}
