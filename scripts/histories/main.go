// Command histories records workflow histories for the replay tests in
// workflows/testdata: it runs each scenario's workflow for real on an
// embedded Temporal dev server, with stand-in activities, fetches the
// history and writes it as JSON (the format WorkflowReplayer reads).
//
//	go run ./scripts/histories                 # every scenario whose file is missing
//	go run ./scripts/histories -force probe    # re-record one scenario
//
// Existing files are kept unless -force: a history recorded from an older
// version of a workflow is the proof that the current code still replays
// it, so it must never be regenerated from the new code.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	tlog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/worker"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/cairn-rmm/cairn/engine"
	"github.com/cairn-rmm/cairn/internal/devtemporal"
	"github.com/cairn-rmm/cairn/workflows"
)

const queue = "histories"

// scenario runs one workflow to completion and returns its ID.
type scenario struct {
	file string // under workflows/testdata
	run  func(ctx context.Context, c client.Client) (id string, err error)
	// frozen histories were recorded from an older workflow version and
	// are never re-recorded, not even with -force.
	frozen bool
}

func main() {
	out := flag.String("out", "workflows/testdata", "directory the histories are written to")
	force := flag.Bool("force", false, "overwrite existing files")
	flag.Parse()
	if err := run(*out, *force, flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, "histories:", err)
		os.Exit(1)
	}
}

func run(out string, force bool, only []string) error {
	var todo []scenario
	for _, s := range scenarios {
		name := s.file[:len(s.file)-len(filepath.Ext(s.file))]
		if len(only) > 0 && !slices.Contains(only, name) {
			continue
		}
		if _, err := os.Stat(filepath.Join(out, s.file)); err == nil && (!force || s.frozen) {
			fmt.Println("keep   ", s.file)
			continue
		}
		todo = append(todo, s)
	}
	if len(todo) == 0 {
		return nil
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	srv, err := devtemporal.Start(devtemporal.Options{SearchAttributes: workflows.SearchAttributes, Logger: quiet, LogLevel: slog.LevelError})
	if err != nil {
		return err
	}
	defer srv.Stop()
	c, err := client.Dial(client.Options{HostPort: srv.Address, Namespace: srv.Namespace, Logger: tlog.NewStructuredLogger(quiet)})
	if err != nil {
		return err
	}
	defer c.Close()
	w := worker.New(c, queue, worker.Options{})
	for _, wf := range engine.Workflows() {
		w.RegisterWorkflow(wf)
	}
	for name, fn := range standIns {
		w.RegisterActivityWithOptions(fn, activity.RegisterOptions{Name: name})
	}
	if err := w.Start(); err != nil {
		return err
	}
	defer w.Stop()
	// Job runs send each device's activity to its site's queue; an
	// incident's service control runs its DeviceOperation child there.
	sw := worker.New(c, workflows.SiteTaskQueue(siteSlug), worker.Options{})
	for _, wf := range engine.Workflows() {
		sw.RegisterWorkflow(wf)
	}
	for name, fn := range standIns {
		sw.RegisterActivityWithOptions(fn, activity.RegisterOptions{Name: name})
	}
	if err := sw.Start(); err != nil {
		return err
	}
	defer sw.Stop()

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	for _, s := range todo {
		id, err := s.run(ctx, c)
		if err != nil {
			return fmt.Errorf("%s: %w", s.file, err)
		}
		if err := save(ctx, c, id, filepath.Join(out, s.file)); err != nil {
			return fmt.Errorf("%s: %w", s.file, err)
		}
		fmt.Println("wrote  ", s.file)
	}
	return nil
}

// save writes the closed workflow's whole history.
func save(ctx context.Context, c client.Client, id, path string) error {
	it := c.GetWorkflowHistory(ctx, id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	var h historypb.History
	for it.HasNext() {
		e, err := it.Next()
		if err != nil {
			return err
		}
		h.Events = append(h.Events, e)
	}
	b, err := protojson.MarshalOptions{Multiline: true, Indent: "  "}.Marshal(&h)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// start runs a workflow on the generator's queue and waits for its result.
func start(ctx context.Context, c client.Client, id string, wf any, args ...any) (client.WorkflowRun, error) {
	return c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: queue}, wf, args...)
}

func wait(ctx context.Context, run client.WorkflowRun, err error) (string, error) {
	if err != nil {
		return "", err
	}
	return run.GetID(), run.Get(ctx, nil)
}

func unique(prefix string) string { return fmt.Sprintf("%s-%d", prefix, time.Now().UnixNano()) }
