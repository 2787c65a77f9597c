// Package devtemporal embeds Temporal's own development server (the one
// `temporal server start-dev` runs) in the Engine process, for `make run`
// and integration tests when TEMPORAL_ADDRESS is unset. It is the only
// package that imports the Temporal server, so ordinary builds and unit
// tests do not pay for it.
package devtemporal

import (
	"fmt"
	"log/slog"
	"net"
	"strconv"

	"github.com/google/uuid"
	"github.com/temporalio/cli/temporalcli/devserver"
	enumspb "go.temporal.io/api/enums/v1"
)

// Options configure Start.
type Options struct {
	// DatabaseFile is the SQLite file; empty keeps everything in memory.
	DatabaseFile string
	IP           string // default 127.0.0.1
	Port         int    // 0 picks a free port
	// UIPort serves the Temporal UI; 0 disables it.
	UIPort    int
	Namespace string // default "default"
	// SearchAttributes are registered as Keyword attributes.
	SearchAttributes []string
	Logger           *slog.Logger
	LogLevel         slog.Level
}

// Server is a running embedded Temporal server.
type Server struct {
	srv       *devserver.Server
	Address   string
	UIAddress string // empty when the UI is off
	Namespace string
}

// Start starts the server and returns once its frontend serves.
func Start(o Options) (*Server, error) {
	if o.IP == "" {
		o.IP = "127.0.0.1"
	}
	if o.Namespace == "" {
		o.Namespace = "default"
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Port == 0 {
		o.Port = devserver.MustGetFreePort(o.IP)
	} else if err := devserver.CheckPortFree(o.IP, o.Port); err != nil {
		return nil, fmt.Errorf("temporal frontend port %d: %w (set TEMPORAL_ADDRESS to use a running server, or CAIRN_TEMPORAL_PORT)", o.Port, err)
	}
	attrs := map[string]enumspb.IndexedValueType{}
	for _, name := range o.SearchAttributes {
		attrs[name] = enumspb.INDEXED_VALUE_TYPE_KEYWORD
	}
	opts := devserver.StartOptions{
		FrontendIP:             o.IP,
		FrontendPort:           o.Port,
		Namespaces:             []string{o.Namespace},
		ClusterID:              uuid.NewString(),
		MasterClusterName:      "active",
		CurrentClusterName:     "active",
		InitialFailoverVersion: 1,
		Logger:                 o.Logger,
		LogLevel:               o.LogLevel,
		DatabaseFile:           o.DatabaseFile,
		SearchAttributes:       attrs,
		DynamicConfigValues: map[string]any{
			// Workflow updates and a short visibility delay, as the CLI's dev server sets them.
			"frontend.enableUpdateWorkflowExecution":              true,
			"frontend.enableUpdateWorkflowExecutionAsyncAccepted": true,
		},
	}
	s := &Server{Address: net.JoinHostPort(o.IP, strconv.Itoa(o.Port)), Namespace: o.Namespace}
	if o.UIPort != 0 {
		// The UI server panics on a busy port, so check first.
		if err := devserver.CheckPortFree(o.IP, o.UIPort); err != nil {
			return nil, fmt.Errorf("temporal UI port %d: %w (set CAIRN_TEMPORAL_UI_PORT, 0 disables the UI)", o.UIPort, err)
		}
		opts.UIIP, opts.UIPort = o.IP, o.UIPort
		s.UIAddress = "http://" + net.JoinHostPort(o.IP, strconv.Itoa(o.UIPort))
	}
	srv, err := devserver.Start(opts)
	if err != nil {
		return nil, fmt.Errorf("start embedded Temporal: %w", err)
	}
	s.srv = srv
	return s, nil
}

// Stop shuts the server down.
func (s *Server) Stop() { s.srv.Stop() }
