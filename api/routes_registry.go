package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/agent/proto/registrywire"
)

// registryRoutes are the registry editor (SPEC "Registry", docs/api.md
// "Registry"): each request is a DeviceOperation (registry_management_request)
// on a device whose agent reports the registry capability (Windows
// agents), checked here with the agent's own rules (agent/registry)
// before anything starts.
func (s *Server) registryRoutes() []Route {
	const base = "/api/device/registry/{hostname}"
	// Each is an operation (operationErrors) the agent may refuse.
	roots := append([]string{proto.CodeUnsupportedPlatform}, operationErrors...) // agent_too_old is in operationErrors
	codes := append(slices.Clone(roots), proto.CodeRegistryKeyNotFound)
	mutation := append(slices.Clone(codes), proto.CodePathExists, proto.CodeRegistryTypeInvalid, proto.CodeRegistryValueNotFound)
	return pendableRoutes([]Route{
		{"GET", base + "/roots", AuthToken, getAction(s, s.registryRoots).Errors(roots...), "List a device's registry hives"},
		// A key's children carry its values' data: device content.
		{"GET", base + "/children", AuthToken, s.deviceContent(getAction(s, s.registryChildren).
			Query(QueryParam{Name: "path", Type: "string", Description: `registry path, e.g. HKLM\Software`, Required: true}).
			Errors(codes...)), "List a registry key's children"},
		{"POST", base + "/key/create", AuthToken, jsonAction(s, http.StatusOK, false, s.registryKeyCreate).Errors(mutation...), "Create a registry key"},
		{"POST", base + "/key/rename", AuthToken, jsonAction(s, http.StatusOK, false, s.registryKeyRename).Errors(mutation...), "Rename a registry key"},
		{"POST", base + "/key/delete", AuthToken, jsonAction(s, http.StatusOK, false, s.registryKeyDelete).Errors(mutation...), "Delete a registry key"},
		{"POST", base + "/value/create", AuthToken, jsonAction(s, http.StatusOK, false, s.registryValueCreate).Errors(mutation...), "Create a registry value"},
		{"POST", base + "/value/update", AuthToken, jsonAction(s, http.StatusOK, false, s.registryValueUpdate).Errors(mutation...), "Update a registry value"},
		{"POST", base + "/value/delete", AuthToken, jsonAction(s, http.StatusOK, false, s.registryValueDelete).Errors(mutation...), "Delete a registry value"},
	})
}

type registryKeyReq struct {
	Path string `json:"path"`
}

type registryKeyRenameReq struct {
	Path    string `json:"path"`
	NewName string `json:"new_name"`
}

type registryValueReq struct {
	Path  string              `json:"path"`
	Value proto.RegistryValue `json:"value"`
}

type registryValueDeleteReq struct {
	Path string `json:"path"`
	Name string `json:"name"`
}

func (q *registryKeyReq) validate() error {
	return registryCheck(proto.RegistryRequest{Action: proto.RegistryKeyCreate, Path: q.Path})
}

func (q *registryKeyRenameReq) validate() error {
	return registryCheck(proto.RegistryRequest{Action: proto.RegistryKeyRename, Path: q.Path, NewName: q.NewName})
}

func (q *registryValueReq) validate() error {
	return registryCheck(proto.RegistryRequest{Action: proto.RegistryValueCreate, Path: q.Path, Value: &q.Value})
}

func (q *registryValueDeleteReq) validate() error {
	return registryCheck(proto.RegistryRequest{Action: proto.RegistryValueDelete, Path: q.Path,
		Value: &proto.RegistryValue{Name: q.Name}})
}

// registryCheck applies the agent's checks; a refusal is validation_failed
// naming the field.
func registryCheck(req proto.RegistryRequest) error {
	_, _, err := registrywire.Check(req)
	var fe *registrywire.FieldError
	if errors.As(err, &fe) {
		var v cairn.Validation
		v.Add(fe.Field, strings.TrimPrefix(fe.Message, fe.Field+": "))
		return v.Err()
	}
	return err
}

// registryOperate runs the request on the agent and decodes its answer
// into out. Whether the device has a registry is its agent's word, not
// its operating system's name: operate refuses an agent without the
// registry capability (unsupported_platform when it reported its set,
// agent_too_old when it is older than capabilities) before anything
// starts.
func (s *Server) registryOperate(r *http.Request, req proto.RegistryRequest, summary string, out any) error {
	ctx, hostname := r.Context(), pathParam(r, "hostname")
	if e := auditFrom(r); e != nil && req.Path != "" {
		e.Target = "hostname=" + hostname + " path=" + req.Path
	}
	res, err := s.operate(ctx, hostname, proto.EventRegistryManagement, req, "registry_"+req.Action, summary)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(res.Payload, out); err != nil {
		return fmt.Errorf("decode registry answer: %w", err)
	}
	return nil
}

func (s *Server) registryRoots(r *http.Request) (proto.RegistryRootsResult, error) {
	var out proto.RegistryRootsResult
	err := s.registryOperate(r, proto.RegistryRequest{Action: proto.RegistryRoots}, "List registry roots", &out)
	return out, err
}

func (s *Server) registryChildren(r *http.Request) (proto.RegistryChildrenResult, error) {
	req := proto.RegistryRequest{Action: proto.RegistryChildren, Path: r.URL.Query().Get("path")}
	if err := registryCheck(req); err != nil {
		return proto.RegistryChildrenResult{}, err
	}
	var out proto.RegistryChildrenResult
	err := s.registryOperate(r, req, "List registry key "+req.Path, &out)
	return out, err
}

func (s *Server) registryKeyCreate(r *http.Request, q registryKeyReq) (proto.RegistryKeyResult, error) {
	var out proto.RegistryKeyResult
	err := s.registryOperate(r, proto.RegistryRequest{Action: proto.RegistryKeyCreate, Path: q.Path},
		"Create registry key "+q.Path, &out)
	return out, err
}

func (s *Server) registryKeyRename(r *http.Request, q registryKeyRenameReq) (proto.RegistryKeyResult, error) {
	var out proto.RegistryKeyResult
	err := s.registryOperate(r, proto.RegistryRequest{Action: proto.RegistryKeyRename, Path: q.Path, NewName: q.NewName},
		"Rename registry key "+q.Path+" to "+q.NewName, &out)
	return out, err
}

func (s *Server) registryKeyDelete(r *http.Request, q registryKeyReq) (proto.RegistryKeyResult, error) {
	var out proto.RegistryKeyResult
	err := s.registryOperate(r, proto.RegistryRequest{Action: proto.RegistryKeyDelete, Path: q.Path},
		"Delete registry key "+q.Path, &out)
	return out, err
}

func (s *Server) registryValueCreate(r *http.Request, q registryValueReq) (proto.RegistryValueResult, error) {
	var out proto.RegistryValueResult
	err := s.registryOperate(r, proto.RegistryRequest{Action: proto.RegistryValueCreate, Path: q.Path, Value: &q.Value},
		fmt.Sprintf("Create registry value %q (%s) in %s", q.Value.Name, q.Value.Type, q.Path), &out)
	return out, err
}

func (s *Server) registryValueUpdate(r *http.Request, q registryValueReq) (proto.RegistryValueResult, error) {
	var out proto.RegistryValueResult
	err := s.registryOperate(r, proto.RegistryRequest{Action: proto.RegistryValueUpdate, Path: q.Path, Value: &q.Value},
		fmt.Sprintf("Set registry value %q (%s) in %s", q.Value.Name, q.Value.Type, q.Path), &out)
	return out, err
}

func (s *Server) registryValueDelete(r *http.Request, q registryValueDeleteReq) (proto.RegistryValueResult, error) {
	var out proto.RegistryValueResult
	err := s.registryOperate(r, proto.RegistryRequest{Action: proto.RegistryValueDelete, Path: q.Path,
		Value: &proto.RegistryValue{Name: q.Name}}, fmt.Sprintf("Delete registry value %q in %s", q.Name, q.Path), &out)
	return out, err
}
