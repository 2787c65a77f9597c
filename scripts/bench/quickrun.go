package main

// The quick-run figure: one script run fanned out to every simulated agent
// (POST /api/scripts/quick_run), timed from the request until the Engine
// has recorded every device's result. The simulated agents verify each
// payload's signature for real and answer a fixed output without running
// anything, so what is measured is the Engine: signing a payload per
// device, the JobRun workflow's per-device activity on the site queue, the
// request over each agent's socket and the recorded outcome.

import (
	"context"
	"fmt"
	"sort"
	"time"
)

type quickRunResult struct {
	Agents int `json:"agents"`
	// Seconds is each pass's time until every result was recorded.
	Seconds       []float64 `json:"seconds"`
	MedianSeconds float64   `json:"median_seconds"`
	// AcceptMs is each pass's POST latency (signing and recording).
	AcceptMs []float64 `json:"accept_ms"`
	// Counts are the last pass's results by status.
	Counts             map[string]any `json:"counts"`
	EngineCPUSeconds   float64        `json:"engine_cpu_seconds"`
	PostgresCPUSeconds float64        `json:"postgresql_cpu_seconds"`
	Errors             []string       `json:"errors,omitempty"`
}

// benchQuickRun runs passes quick runs of a short sh script to every
// device, one after another.
func benchQuickRun(ctx context.Context, api *client, passes int, eng *procWatch) *quickRunResult {
	out := &quickRunResult{}
	list, err := api.allDevices(ctx, "")
	if err != nil {
		out.Errors = append(out.Errors, err.Error())
		return out
	}
	var guids []string
	for _, d := range list {
		if m, ok := d.(map[string]any); ok && m["agent_socket"] == true {
			if g, ok := m["guid"].(string); ok {
				guids = append(guids, g)
			}
		}
	}
	if len(guids) > 1000 {
		guids = guids[:1000] // one quick run takes at most 1,000 devices
	}
	out.Agents = len(guids)
	engCPU0, pgCPU0 := eng.cpu()
	for p := 0; p < passes && ctx.Err() == nil; p++ {
		start := time.Now()
		res, err := api.call(ctx, "POST", "/api/scripts/quick_run", map[string]any{"device_guids": guids, "language": "sh",
			"body": "echo bench", "timeout_seconds": 60})
		if err != nil {
			out.Errors = append(out.Errors, err.Error())
			return out
		}
		accepted := time.Since(start)
		id, _ := res["run_id"].(string)
		for ctx.Err() == nil {
			run, err := api.call(ctx, "GET", "/api/scripts/quick_run/"+id, nil)
			if err == nil && (run["status"] == "succeeded" || run["status"] == "failed") {
				out.Seconds = append(out.Seconds, round(time.Since(start).Seconds(), 2))
				out.AcceptMs = append(out.AcceptMs, ms(accepted))
				out.Counts, _ = run["counts"].(map[string]any)
				fmt.Fprintf(logOut, "bench: quick run to %d agents: all results recorded in %.1fs (accepted in %.0fms) counts=%v\n",
					len(guids), time.Since(start).Seconds(), ms(accepted), out.Counts)
				break
			}
			select {
			case <-ctx.Done():
			case <-time.After(500 * time.Millisecond):
			}
		}
	}
	engCPU1, pgCPU1 := eng.cpu()
	out.EngineCPUSeconds, out.PostgresCPUSeconds = round(engCPU1-engCPU0, 2), round(pgCPU1-pgCPU0, 2)
	if len(out.Seconds) > 0 {
		s := append([]float64(nil), out.Seconds...)
		sort.Float64s(s)
		out.MedianSeconds = s[len(s)/2]
	}
	return out
}
