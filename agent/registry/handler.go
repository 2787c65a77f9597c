// Package registry is the agent's registry editor (SPEC "Registry",
// docs/api.md "Registry"): it answers registry_management_request on
// Windows through a Store (store_windows.go), and unsupported_platform
// elsewhere. Its checks are agent/proto/registrywire's, shared with the
// Engine.
package registry

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"

	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/agent/runtime"
)

// Store is the registry the handler edits: the real one on Windows
// (System), an in-memory one in tests (registrytest). Errors are
// *proto.Error with the registry codes (CodeRegistryKeyNotFound,
// CodeRegistryValueNotFound, CodePathExists, CodeOpPermission) or
// anything else, answered as failed.
type Store interface {
	// Children lists the subkey names and values of a key.
	Children(p Path) ([]string, []Value, error)
	// CreateKey creates p below an existing parent; p must not exist.
	CreateKey(p Path) error
	// RenameKey gives p the name newName under the same parent (whose
	// key newName must not exist), with every subkey and value.
	RenameKey(p Path, newName string) error
	// DeleteKey deletes p with everything below it.
	DeleteKey(p Path) error
	// SetValue writes v in key p: create requires that no value of that
	// name exists, update that one does.
	SetValue(p Path, v Value, create bool) error
	// DeleteValue deletes the value name of key p.
	DeleteValue(p Path, name string) error
}

// Register adds the registry_management_request handler to h. A nil
// store (every platform but Windows) answers unsupported_platform.
func Register(h *runtime.Handlers, store Store, log *slog.Logger) error {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &server{store: store, log: log}
	if err := h.Register(proto.EventRegistryManagement, s.handle); err != nil {
		return fmt.Errorf("registry: %w", err)
	}
	return nil
}

type server struct {
	store Store
	log   *slog.Logger
}

func (s *server) handle(_ context.Context, _ runtime.Caller, payload json.RawMessage) (any, error) {
	if s.store == nil {
		return nil, &proto.Error{Code: proto.CodeUnsupportedPlatform, Message: "the registry exists only on Windows"}
	}
	var req proto.RegistryRequest
	if len(payload) == 0 || json.Unmarshal(payload, &req) != nil {
		return nil, &proto.Error{Code: proto.CodeOpInvalid, Message: "the request payload is malformed"}
	}
	p, v, err := Check(req)
	if err != nil {
		var fe *FieldError
		if errors.As(err, &fe) {
			return nil, &proto.Error{Code: fe.Code, Message: fe.Error()}
		}
		return nil, err
	}
	if req.Action != proto.RegistryRoots && req.Action != proto.RegistryChildren {
		s.log.Info("registry change", "action", req.Action, "path", p.String(), "value", v.Name)
	}
	switch req.Action {
	case proto.RegistryRoots:
		return proto.RegistryRootsResult{Roots: Roots}, nil
	case proto.RegistryChildren:
		return s.children(p)
	case proto.RegistryKeyCreate:
		if err := s.store.CreateKey(p); err != nil {
			return nil, err
		}
		return proto.RegistryKeyResult{Key: key(p)}, nil
	case proto.RegistryKeyRename:
		if err := s.store.RenameKey(p, req.NewName); err != nil {
			return nil, err
		}
		return proto.RegistryKeyResult{Key: key(p.Parent().Child(req.NewName))}, nil
	case proto.RegistryKeyDelete:
		if err := s.store.DeleteKey(p); err != nil {
			return nil, err
		}
		return proto.RegistryKeyResult{Key: key(p)}, nil
	case proto.RegistryValueCreate, proto.RegistryValueUpdate:
		if err := s.store.SetValue(p, v, req.Action == proto.RegistryValueCreate); err != nil {
			return nil, err
		}
		return proto.RegistryValueResult{Path: p.String(), Value: Wire(v)}, nil
	default: // proto.RegistryValueDelete
		if err := s.store.DeleteValue(p, v.Name); err != nil {
			return nil, err
		}
		return proto.RegistryValueResult{Path: p.String(), Value: proto.RegistryValue{Name: v.Name}}, nil
	}
}

func key(p Path) proto.RegistryKey { return proto.RegistryKey{Name: p.Name(), Path: p.String()} }

// Listing limits: an answer travels in one socket reply (at most 1.5 MiB,
// internal/agentgateway.MaxReplyBytes) and one Temporal payload, so a
// children answer stops at ListBudget bytes of names and data, and a
// value whose data is over MaxListedData is listed with null data.
const (
	ListBudget    = 1 << 20
	MaxListedData = 64 << 10
)

func (s *server) children(p Path) (proto.RegistryChildrenResult, error) {
	names, values, err := s.store.Children(p)
	if err != nil {
		return proto.RegistryChildrenResult{}, err
	}
	out := proto.RegistryChildrenResult{Path: p.String(), Subkeys: []proto.RegistryKey{}, Values: []proto.RegistryValue{}}
	sort.Slice(names, func(i, j int) bool { return strings.ToLower(names[i]) < strings.ToLower(names[j]) })
	sort.Slice(values, func(i, j int) bool { return strings.ToLower(values[i].Name) < strings.ToLower(values[j].Name) })
	// Values first: they are what the open key shows.
	size := 0
	for _, v := range values {
		w := Wire(v)
		data, _ := json.Marshal(w.Data)
		if len(data) > MaxListedData {
			w.Data, data, out.Truncated = nil, nil, true
		}
		if size += len(w.Name) + len(w.Type) + len(data) + 32; size > ListBudget {
			out.Truncated = true
			break
		}
		out.Values = append(out.Values, w)
	}
	for _, n := range names {
		k := key(p.Child(n))
		if size += len(k.Name) + len(k.Path) + 24; size > ListBudget {
			out.Truncated = true
			break
		}
		out.Subkeys = append(out.Subkeys, k)
	}
	return out, nil
}

// KeyNotFound is the error a store answers for a missing key.
func KeyNotFound(p Path) error {
	return &proto.Error{Code: proto.CodeRegistryKeyNotFound, Message: fmt.Sprintf("no key %s", p)}
}

// ValueNotFound is the error for a missing value.
func ValueNotFound(p Path, name string) error {
	return &proto.Error{Code: proto.CodeRegistryValueNotFound, Message: fmt.Sprintf("no value %q in %s", name, p)}
}

// Exists is the error for a key or value that should not exist yet.
func Exists(what string) error {
	return &proto.Error{Code: proto.CodePathExists, Message: what + " exists already"}
}
