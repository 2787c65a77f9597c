package backup

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairn-rmm/cairn"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn/db"
)

// BenchmarkBackup10kDevices is issue 26's bench: export and restore of an
// Engine with 10,000 devices (CAIRN_BENCH_DEVICES), each with an inventory
// document and 50 software rows; it reports the time of each and the peak
// heap growth during each. docs/benchmarks.md has figures and the command.
func BenchmarkBackup10kDevices(b *testing.B) {
	devices := 10000
	if v, err := strconv.Atoi(os.Getenv("CAIRN_BENCH_DEVICES")); err == nil && v > 0 {
		devices = v
	}
	ctx := context.Background()
	src := benchEngine(b, true)
	populate(b, src, devices, 50)
	fresh := benchEngine(b, false)
	b.ResetTimer()
	for range b.N {
		var file bytes.Buffer
		start := time.Now()
		peak := heapPeak(func() { require.NoError(b, src.svc.Export(ctx, &file)) })
		b.ReportMetric(time.Since(start).Seconds(), "export-s")
		b.ReportMetric(float64(peak)/(1<<20), "export-peak-MiB")
		b.ReportMetric(float64(file.Len())/(1<<20), "file-MiB")

		start = time.Now()
		peak = heapPeak(func() {
			o, err := fresh.svc.Open(bytes.NewReader(file.Bytes()), passphrase)
			require.NoError(b, err)
			id, _, err := fresh.svc.Stage(ctx, o, "bench")
			require.NoError(b, err)
			res, err := fresh.svc.Apply(ctx, id)
			require.NoError(b, err)
			require.EqualValues(b, devices, res.Rows["devices"])
		})
		b.ReportMetric(time.Since(start).Seconds(), "restore-s")
		b.ReportMetric(float64(peak)/(1<<20), "restore-peak-MiB")
	}
}

func benchEngine(b *testing.B, configured bool) *engine { return newEngineTB(b, configured) }

// heapPeak runs f and answers the peak growth of the in-use heap over
// what it was before, sampled every 10 ms.
func heapPeak(f func()) uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base := ms.HeapInuse
	var peak atomic.Uint64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			if m.HeapInuse > base && m.HeapInuse-base > peak.Load() {
				peak.Store(m.HeapInuse - base)
			}
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	})
	f()
	close(stop)
	wg.Wait()
	return peak.Load()
}

// populate adds devices with an inventory document and software rows.
func populate(b *testing.B, e *engine, devices, software int) {
	ctx := context.Background()
	q := e.store.Queries
	site, err := q.SiteInsert(ctx, db.SiteInsertParams{Name: "Bench", Slug: "bench"})
	require.NoError(b, err)
	doc := []byte(`[` + strings.Repeat(`{"name":"package-with-a-long-name","version":"1.2.3-4ubuntu5","publisher":"Example Corporation"},`, software-1) +
		`{"name":"last","version":"1","publisher":"x"}]`)
	for i := range devices {
		guid := fmt.Sprintf("00000000-0000-4000-8000-%012d", i)
		_, err := q.DeviceInsert(ctx, db.DeviceInsertParams{Guid: cairn.DeviceGUID(guid), Hostname: fmt.Sprintf("bench-%05d", i), SiteID: site.ID})
		require.NoError(b, err)
		require.NoError(b, q.DeviceInventoryUpsert(ctx, db.DeviceInventoryUpsertParams{DeviceGuid: cairn.DeviceGUID(guid), Hash: "h",
			Hardware: []byte(`{"cpu":"Example CPU @ 3.0GHz","memory_bytes":17179869184}`), Os: []byte(`{"name":"Debian GNU/Linux","version":"13"}`),
			Software: doc, PartHashes: []byte(`{}`)}))
		rows := make([]db.DeviceSoftwareInsertParams, software)
		for j := range rows {
			rows[j] = db.DeviceSoftwareInsertParams{DeviceGuid: cairn.DeviceGUID(guid), SiteID: site.ID, NameKey: fmt.Sprintf("package-%03d", j),
				Name: fmt.Sprintf("Package %03d", j), Version: "1.2.3", Publisher: "Example Corporation"}
		}
		_, err = q.DeviceSoftwareInsert(ctx, rows)
		require.NoError(b, err)
	}
}
