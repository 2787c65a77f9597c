package main

// The file-transfer figure (-transfer): one real cairn-agent on loopback,
// a fresh Engine, and a file of -transfer-bytes (1 GiB) moved through the
// Engine's content store each way, -transfer-rounds times. Upload: the
// browser's multipart body (generated, never held) is staged into
// PostgreSQL, the agent fetches it and writes it to disk; timed from the
// POST until the transfer completed. Download: the agent streams the file
// into the store, the browser fetches it; timed from the POST until the
// last byte was read. The Engine's resident memory is sampled every 100 ms
// during each transfer; its growth is the peak over the sample taken just
// before the transfer started. SHA-256 is compared on both sides.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"time"
)

type transferRound struct {
	Direction  string  `json:"direction"`
	Seconds    float64 `json:"seconds"`
	MiBPerSec  float64 `json:"mib_per_s"`
	RSSBaseMiB float64 `json:"rss_base_mib"`
	RSSPeakMiB float64 `json:"rss_peak_mib"`
	GrowthMiB  float64 `json:"rss_growth_mib"`
	SHA256OK   bool    `json:"sha256_ok"`
}

type transferResult struct {
	Bytes  int64           `json:"bytes"`
	Rounds []transferRound `json:"rounds"`
	// Medians per direction: throughput and RSS growth.
	UploadMiBPerSec   float64  `json:"upload_mib_per_s_median"`
	DownloadMiBPerSec float64  `json:"download_mib_per_s_median"`
	UploadGrowthMiB   float64  `json:"upload_rss_growth_mib_median"`
	DownloadGrowthMiB float64  `json:"download_rss_growth_mib_median"`
	MaxGrowthMiB      float64  `json:"rss_growth_mib_max"`
	EngineRSSIdleMiB  float64  `json:"engine_rss_idle_mib"`
	Errors            []string `json:"errors,omitempty"`
}

const transferHost = "bench-transfer"

func runTransfer(ctx context.Context, o runOptions, dataDir string, size int64, rounds int) (*transferResult, error) {
	out := &transferResult{Bytes: size}
	if err := os.RemoveAll(dataDir); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dataDir, 0o755); err != nil {
		return nil, err
	}
	port, tport := freePort(), freePort()
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	// Downloads keep their content a minute, so rounds do not pile up
	// gigabytes in the store.
	engine, err := startEngine(ctx, o.engineBin, dataDir, port, tport, "CAIRN_TRANSFER_RETENTION=1m",
		fmt.Sprintf("CAIRN_TRANSFER_MAX_BYTES=%d", size+1<<20))
	if err != nil {
		return nil, err
	}
	defer func() { stopEngine(engine) }()
	api := &client{base: base}
	if err := api.waitReady(ctx, 3*time.Minute); err != nil {
		return nil, fmt.Errorf("engine not ready: %w", err)
	}
	code, err := api.prepare(ctx, 1, dataDir)
	if err != nil {
		return nil, err
	}
	stopAgent, err := startAgent(ctx, o.agentBin, base, code, filepath.Join(dataDir, "agent"))
	if err != nil {
		return nil, err
	}
	defer stopAgent()
	if err := waitSocket(ctx, api, transferHost); err != nil {
		return nil, err
	}
	dest, err := filepath.Abs(filepath.Join(dataDir, "files"))
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dest, 0o755); err != nil {
		return nil, err
	}
	want := sumOf(benchContent(size))
	pid := engine.Process.Pid
	_, out.EngineRSSIdleMiB = procUsage(pid)

	for i := 0; i < rounds; i++ {
		up, err := uploadRound(ctx, api, pid, dest, size, want)
		if err != nil {
			out.Errors = append(out.Errors, err.Error())
			break
		}
		out.Rounds = append(out.Rounds, up)
		fmt.Fprintf(logOut, "upload %d: %.1f MiB/s, RSS +%.1f MiB\n", i+1, up.MiBPerSec, up.GrowthMiB)
		down, err := downloadRound(ctx, api, pid, filepath.Join(dest, "big.bin"), size, want)
		if err != nil {
			out.Errors = append(out.Errors, err.Error())
			break
		}
		out.Rounds = append(out.Rounds, down)
		fmt.Fprintf(logOut, "download %d: %.1f MiB/s, RSS +%.1f MiB\n", i+1, down.MiBPerSec, down.GrowthMiB)
		if err := os.Remove(filepath.Join(dest, "big.bin")); err != nil {
			return nil, err
		}
	}
	var upRate, downRate, upGrow, downGrow []float64
	for _, r := range out.Rounds {
		out.MaxGrowthMiB = max(out.MaxGrowthMiB, r.GrowthMiB)
		if r.Direction == "upload" {
			upRate, upGrow = append(upRate, r.MiBPerSec), append(upGrow, r.GrowthMiB)
		} else {
			downRate, downGrow = append(downRate, r.MiBPerSec), append(downGrow, r.GrowthMiB)
		}
	}
	if len(upRate) > 0 {
		out.UploadMiBPerSec, out.UploadGrowthMiB = median(upRate), median(upGrow)
	}
	if len(downRate) > 0 {
		out.DownloadMiBPerSec, out.DownloadGrowthMiB = median(downRate), median(downGrow)
	}
	return out, nil
}

// startAgent enrolls and runs a real agent named transferHost.
func startAgent(ctx context.Context, agentBin, base, code, dir string) (func(), error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	cfg := filepath.Join(dir, "agent.json")
	logFile, err := os.Create(filepath.Join(dir, "agent.log"))
	if err != nil {
		return nil, err
	}
	enroll := exec.CommandContext(ctx, agentBin, "enroll", "--server", base, "--code", code, "--hostname", transferHost, "--config", cfg)
	enroll.Stdout, enroll.Stderr = logFile, logFile
	if err := enroll.Run(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("enroll the transfer agent (see %s): %w", logFile.Name(), err)
	}
	run := exec.CommandContext(ctx, agentBin, "run", "--hostname", transferHost, "--config", cfg)
	run.Stdout, run.Stderr = logFile, logFile
	if err := run.Start(); err != nil {
		logFile.Close()
		return nil, err
	}
	return func() {
		_ = run.Process.Signal(os.Interrupt)
		_ = run.Wait()
		logFile.Close()
	}, nil
}

// benchContent is the file's bytes: deterministic, generated as read.
func benchContent(size int64) io.Reader {
	var key [32]byte
	copy(key[:], "cairn transfer bench")
	return io.LimitReader(rand.NewChaCha8(key), size)
}

func sumOf(r io.Reader) string {
	h := sha256.New()
	_, _ = io.Copy(h, r)
	return hex.EncodeToString(h.Sum(nil))
}

// rssWatch samples a process's resident memory until stopped.
type rssWatch struct {
	base float64
	mu   sync.Mutex
	peak float64
	stop chan struct{}
	done chan struct{}
}

func watchRSS(pid int) *rssWatch {
	_, base := procUsage(pid)
	w := &rssWatch{base: base, peak: base, stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-w.stop:
				return
			case <-t.C:
				if _, rss := procUsage(pid); rss > 0 {
					w.mu.Lock()
					w.peak = max(w.peak, rss)
					w.mu.Unlock()
				}
			}
		}
	}()
	return w
}

func (w *rssWatch) finish(r *transferRound) {
	close(w.stop)
	<-w.done
	r.RSSBaseMiB, r.RSSPeakMiB, r.GrowthMiB = w.base, w.peak, w.peak-w.base
}

func rate(size int64, d time.Duration) float64 { return float64(size) / (1 << 20) / d.Seconds() }

func uploadRound(ctx context.Context, api *client, pid int, dest string, size int64, want string) (transferRound, error) {
	r := transferRound{Direction: "upload"}
	pr, pw := io.Pipe()
	mw := multipart.NewWriter(pw)
	go func() {
		err := func() error {
			if err := mw.WriteField("destination", dest); err != nil {
				return err
			}
			h := textproto.MIMEHeader{}
			h.Set("Content-Disposition", `form-data; name="file"; filename="big.bin"`)
			h.Set("Content-Type", "application/octet-stream")
			part, err := mw.CreatePart(h)
			if err != nil {
				return err
			}
			if _, err := io.Copy(part, benchContent(size)); err != nil {
				return err
			}
			return mw.Close()
		}()
		pw.CloseWithError(err)
	}()
	watch := watchRSS(pid)
	start := time.Now()
	req, err := http.NewRequestWithContext(ctx, "POST", api.base+"/api/device/files/"+transferHost+"/upload", pr)
	if err != nil {
		return r, err
	}
	req.Header.Set("Content-Type", mw.FormDataContentType())
	req.Header.Set("Authorization", "Bearer "+api.token)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		watch.finish(&r)
		return r, err
	}
	snap := map[string]any{}
	err = decodeJSON(res, &snap)
	if err == nil && res.StatusCode != http.StatusAccepted {
		err = fmt.Errorf("upload: %d %v", res.StatusCode, snap)
	}
	if err == nil {
		snap, err = waitTransfer(ctx, api, snap["transfer_id"].(string))
	}
	d := time.Since(start)
	watch.finish(&r)
	if err != nil {
		return r, err
	}
	if snap["state"] != "completed" {
		return r, fmt.Errorf("upload ended %v: %v", snap["state"], snap["error"])
	}
	f, err := os.Open(filepath.Join(dest, "big.bin"))
	if err != nil {
		return r, err
	}
	defer f.Close()
	r.SHA256OK = sumOf(f) == want
	r.Seconds, r.MiBPerSec = d.Seconds(), rate(size, d)
	return r, nil
}

func downloadRound(ctx context.Context, api *client, pid int, path string, size int64, want string) (transferRound, error) {
	r := transferRound{Direction: "download"}
	watch := watchRSS(pid)
	start := time.Now()
	snap, err := api.call(ctx, "POST", "/api/device/files/"+transferHost+"/download", map[string]any{"paths": []string{path}})
	if err == nil {
		snap, err = waitTransfer(ctx, api, snap["transfer_id"].(string))
	}
	if err == nil && snap["state"] != "completed" {
		err = fmt.Errorf("download ended %v: %v", snap["state"], snap["error"])
	}
	var got string
	if err == nil {
		got, err = fetch(ctx, api, snap["transfer_id"].(string))
	}
	d := time.Since(start)
	watch.finish(&r)
	if err != nil {
		return r, err
	}
	r.SHA256OK = got == want
	r.Seconds, r.MiBPerSec = d.Seconds(), rate(size, d)
	return r, nil
}

func transferURL(id, what string) string {
	return "/api/device/files/" + transferHost + "/transfer/" + id + "/" + what
}

func waitTransfer(ctx context.Context, api *client, id string) (map[string]any, error) {
	for {
		snap, err := api.call(ctx, "GET", transferURL(id, "status"), nil)
		if err != nil {
			return nil, err
		}
		switch snap["state"] {
		case "completed", "failed", "cancelled":
			return snap, nil
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// fetch reads the content through SHA-256 and returns the sum.
func fetch(ctx context.Context, api *client, id string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, "GET", api.base+transferURL(id, "content"), nil)
	if err != nil {
		return "", err
	}
	req.Header.Set("Authorization", "Bearer "+api.token)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer res.Body.Close()
	if res.StatusCode != 200 {
		return "", fmt.Errorf("content: %d", res.StatusCode)
	}
	return sumOf(res.Body), nil
}

func decodeJSON(res *http.Response, v any) error {
	defer res.Body.Close()
	b, err := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}
