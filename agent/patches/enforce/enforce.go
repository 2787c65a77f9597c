// Package enforce puts a Windows machine's Windows Update policy in a
// patch policy's enforcement mode (SPEC agent behaviour 11,
// patch_policy_enforcement_request). Managed and frozen back up the
// policy values Cairn sets, then set values that stop automatic installs
// while the Windows Update Agent's own API (Cairn's install path) keeps
// working; unmanaged restores exactly what was there, a value or key that
// did not exist included. The backup lives in the registry under the
// agent's own key (BackupKey), so it survives agent restarts and
// re-installs. Everything goes through registry.Store: the real registry
// on Windows (tested under Wine), registrytest.Mem on Linux.
// docs/agent.md "Patch policy enforcement" lists the values.
package enforce

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"

	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/agent/registry"
	"github.com/cairn-rmm/cairn/agent/runtime"
)

// The Windows Update policy keys (Group Policy's "Windows Components >
// Windows Update").
var (
	WindowsUpdateKey = registry.Path{Root: "HKLM", Sub: `SOFTWARE\Policies\Microsoft\Windows\WindowsUpdate`}
	AUKey            = WindowsUpdateKey.Child("AU")
)

// BackupKey is the agent's own key holding the backup (value BackupValue,
// JSON) and the mode in force (value ModeValue). It exists only while a
// mode other than unmanaged is in force.
var BackupKey = registry.Path{Root: "HKLM", Sub: `SOFTWARE\Cairn\PatchEnforcement`}

// Values of BackupKey.
const (
	BackupValue = "Backup"
	ModeValue   = "Mode"
)

// Setting is one policy value Cairn sets.
type Setting struct {
	Key  registry.Path
	Name string
	Data uint32
}

// Settings are the DWORD values each mode sets, all under AU (the whole
// reversible set: unmanaged restores exactly these). Both modes keep
// automatic updates from installing anything: AUOptions 2 is "notify
// before download and install", AutoInstallMinorUpdates 0 stops silent
// installs of minor updates, NoAutoRebootWithLoggedOnUsers 1 stops
// Windows Update rebooting a machine with a user signed in (reboots are
// Cairn's patch_reboot_request). Frozen also sets NoAutoUpdate 1:
// Windows Update neither downloads nor notifies. Nothing Cairn sets
// touches WUServer, UseWUServer, DisableWindowsUpdateAccess or
// DoNotConnectToWindowsUpdateInternetLocations, so searches, downloads
// and installs through the Windows Update Agent's API still work.
func Settings(mode string) []Setting {
	noAuto := uint32(0)
	if mode == proto.PatchModeFrozen {
		noAuto = 1
	}
	return []Setting{
		{AUKey, "NoAutoUpdate", noAuto},
		{AUKey, "AUOptions", 2},
		{AUKey, "AutoInstallMinorUpdates", 0},
		{AUKey, "NoAutoRebootWithLoggedOnUsers", 1},
	}
}

// Managed are the values a backup covers: every one any mode sets.
func Managed() []Setting { return Settings(proto.PatchModeFrozen) }

// Backup is what was there before Cairn set anything: each managed value
// (Present false when it did not exist) and the keys Cairn created, which
// unmanaged deletes again when nothing else was put in them.
type Backup struct {
	Values []proto.PatchPolicyValue `json:"values"`
	// CreatedKeys are full paths, parents first.
	CreatedKeys []string `json:"created_keys"`
}

// Enforcer applies modes to a registry.
type Enforcer struct {
	Store registry.Store
	mu    sync.Mutex
}

// Apply puts the machine in mode and returns the result the agent
// answers.
func (e *Enforcer) Apply(mode string) (proto.PatchPolicyEnforcementResult, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	switch mode {
	case proto.PatchModeManaged, proto.PatchModeFrozen:
		return e.manage(mode)
	case proto.PatchModeUnmanaged:
		return e.restore()
	}
	return proto.PatchPolicyEnforcementResult{}, fmt.Errorf("unknown mode %q", mode)
}

// manage backs up the managed values once (a change between managed and
// frozen keeps the first backup: it holds what was there before Cairn),
// writing the backup before anything else changes, then sets mode's
// values and records the mode.
func (e *Enforcer) manage(mode string) (proto.PatchPolicyEnforcementResult, error) {
	_, have, err := e.backup()
	if err != nil {
		return proto.PatchPolicyEnforcementResult{}, err
	}
	if !have {
		b := Backup{Values: []proto.PatchPolicyValue{}, CreatedKeys: []string{}}
		for _, s := range Managed() {
			v, err := e.read(s.Key, s.Name)
			if err != nil {
				return proto.PatchPolicyEnforcementResult{}, err
			}
			b.Values = append(b.Values, v)
		}
		for _, k := range append(ancestors(BackupKey.Parent()), ancestors(AUKey)...) {
			ok, err := e.exists(k)
			if err != nil {
				return proto.PatchPolicyEnforcementResult{}, err
			}
			if !ok {
				b.CreatedKeys = append(b.CreatedKeys, k.String())
			}
		}
		raw, _ := json.Marshal(b)
		if err := e.ensureKey(BackupKey); err != nil {
			return proto.PatchPolicyEnforcementResult{}, err
		}
		if err := e.put(BackupKey, registry.Value{Name: BackupValue, Type: registry.TypeSZ, Data: string(raw)}); err != nil {
			return proto.PatchPolicyEnforcementResult{}, err
		}
	}
	if err := e.ensureKey(AUKey); err != nil {
		return proto.PatchPolicyEnforcementResult{}, err
	}
	for _, s := range Settings(mode) {
		if err := e.put(s.Key, registry.Value{Name: s.Name, Type: registry.TypeDWord, Data: s.Data}); err != nil {
			return proto.PatchPolicyEnforcementResult{}, err
		}
	}
	if err := e.put(BackupKey, registry.Value{Name: ModeValue, Type: registry.TypeSZ, Data: mode}); err != nil {
		return proto.PatchPolicyEnforcementResult{}, err
	}
	values, err := e.current()
	if err != nil {
		return proto.PatchPolicyEnforcementResult{}, err
	}
	msg := "Windows Update policy set for " + mode
	if !have {
		msg += "; the previous values are backed up"
	}
	return proto.PatchPolicyEnforcementResult{Mode: mode, Status: proto.PatchEnforcementApplied, Message: msg, Values: values}, nil
}

// restore puts every backed-up value back (deleting those that did not
// exist), deletes the keys Cairn created if they are empty, then the
// backup. Without a backup nothing changes. A restore cut short is
// finished by the next one: each step is idempotent and the backup goes
// last.
func (e *Enforcer) restore() (proto.PatchPolicyEnforcementResult, error) {
	b, have, err := e.backup()
	if err != nil {
		return proto.PatchPolicyEnforcementResult{}, err
	}
	if !have {
		values, err := e.current()
		if err != nil {
			return proto.PatchPolicyEnforcementResult{}, err
		}
		return proto.PatchPolicyEnforcementResult{Mode: proto.PatchModeUnmanaged, Status: proto.PatchEnforcementNotManaged,
			Message: "Cairn never managed Windows Update policy here: nothing changed", Values: values}, nil
	}
	for _, v := range b.Values {
		p, err := registry.ParsePath("key", v.Key)
		if err != nil {
			return proto.PatchPolicyEnforcementResult{}, fmt.Errorf("the backup names %q: %w", v.Key, err)
		}
		if !v.Present {
			if err := e.Store.DeleteValue(p, v.Name); err != nil && !isCode(err, proto.CodeRegistryValueNotFound) && !isCode(err, proto.CodeRegistryKeyNotFound) {
				return proto.PatchPolicyEnforcementResult{}, err
			}
			continue
		}
		val, err := registry.ParseValue("value", &proto.RegistryValue{Name: v.Name, Type: v.Type, Data: v.Data})
		if err != nil {
			return proto.PatchPolicyEnforcementResult{}, fmt.Errorf("the backup of %s\\%s cannot be written back: %w", v.Key, v.Name, err)
		}
		if err := e.ensureKey(p); err != nil {
			return proto.PatchPolicyEnforcementResult{}, err
		}
		if err := e.put(p, val); err != nil {
			return proto.PatchPolicyEnforcementResult{}, err
		}
	}
	// The keys Cairn created go while they are empty: the policy keys,
	// then, once the backup is deleted, the agent's own parent key.
	if err := e.deleteCreated(b.CreatedKeys); err != nil {
		return proto.PatchPolicyEnforcementResult{}, err
	}
	if err := e.Store.DeleteKey(BackupKey); err != nil && !isCode(err, proto.CodeRegistryKeyNotFound) {
		return proto.PatchPolicyEnforcementResult{}, err
	}
	if err := e.deleteCreated(b.CreatedKeys); err != nil {
		return proto.PatchPolicyEnforcementResult{}, err
	}
	values, err := e.current()
	if err != nil {
		return proto.PatchPolicyEnforcementResult{}, err
	}
	return proto.PatchPolicyEnforcementResult{Mode: proto.PatchModeUnmanaged, Status: proto.PatchEnforcementRestored,
		Message: "the Windows Update policy values from before Cairn are restored", Values: values}, nil
}

// deleteCreated deletes the keys of created that exist and are empty,
// children first.
func (e *Enforcer) deleteCreated(created []string) error {
	keys := slices.Clone(created)
	slices.SortFunc(keys, func(a, b string) int { return len(b) - len(a) }) // children first
	for _, k := range keys {
		p, err := registry.ParsePath("key", k)
		if err != nil {
			return fmt.Errorf("the backup names %q: %w", k, err)
		}
		names, values, err := e.Store.Children(p)
		if isCode(err, proto.CodeRegistryKeyNotFound) {
			continue
		}
		if err != nil {
			return err
		}
		if len(names) > 0 || len(values) > 0 {
			continue // something else is there: keep it
		}
		if err := e.Store.DeleteKey(p); err != nil && !isCode(err, proto.CodeRegistryKeyNotFound) {
			return err
		}
	}
	return nil
}

// Mode is the mode in force (unmanaged when there is no backup).
func (e *Enforcer) Mode() (string, error) {
	_, values, err := e.Store.Children(BackupKey)
	if isCode(err, proto.CodeRegistryKeyNotFound) {
		return proto.PatchModeUnmanaged, nil
	}
	if err != nil {
		return "", err
	}
	for _, v := range values {
		if s, ok := v.Data.(string); ok && strings.EqualFold(v.Name, ModeValue) {
			return s, nil
		}
	}
	return proto.PatchModeUnmanaged, nil
}

// backup reads the stored backup (false: none).
func (e *Enforcer) backup() (Backup, bool, error) {
	_, values, err := e.Store.Children(BackupKey)
	if isCode(err, proto.CodeRegistryKeyNotFound) {
		return Backup{}, false, nil
	}
	if err != nil {
		return Backup{}, false, err
	}
	for _, v := range values {
		if !strings.EqualFold(v.Name, BackupValue) {
			continue
		}
		s, ok := v.Data.(string)
		var b Backup
		if !ok || json.Unmarshal([]byte(s), &b) != nil {
			return Backup{}, false, fmt.Errorf("the backup in %s is unreadable: remove it only by hand", BackupKey)
		}
		return b, true, nil
	}
	return Backup{}, false, nil
}

// current are the managed values as they are now.
func (e *Enforcer) current() ([]proto.PatchPolicyValue, error) {
	out := []proto.PatchPolicyValue{}
	for _, s := range Managed() {
		v, err := e.read(s.Key, s.Name)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

// read is one value of key p (Present false when it or its key is
// missing).
func (e *Enforcer) read(p registry.Path, name string) (proto.PatchPolicyValue, error) {
	out := proto.PatchPolicyValue{Key: p.String(), Name: name}
	_, values, err := e.Store.Children(p)
	if isCode(err, proto.CodeRegistryKeyNotFound) {
		return out, nil
	}
	if err != nil {
		return out, err
	}
	for _, v := range values {
		if strings.EqualFold(v.Name, name) {
			w := registry.Wire(v)
			out.Present, out.Type, out.Data = true, w.Type, w.Data
			return out, nil
		}
	}
	return out, nil
}

// ancestors are p's keys below its root's first level (HKLM\SOFTWARE),
// parents first, p last.
func ancestors(p registry.Path) []registry.Path {
	var out []registry.Path
	for ; strings.Contains(p.Sub, `\`); p = p.Parent() {
		out = append(out, p)
	}
	slices.Reverse(out)
	return out
}

func (e *Enforcer) exists(p registry.Path) (bool, error) {
	_, _, err := e.Store.Children(p)
	if isCode(err, proto.CodeRegistryKeyNotFound) {
		return false, nil
	}
	return err == nil, err
}

// ensureKey creates p and its missing parents.
func (e *Enforcer) ensureKey(p registry.Path) error {
	ok, err := e.exists(p)
	if err != nil || ok {
		return err
	}
	if p.Parent() != p {
		if err := e.ensureKey(p.Parent()); err != nil {
			return err
		}
	}
	if err := e.Store.CreateKey(p); err != nil && !isCode(err, proto.CodePathExists) {
		return err
	}
	return nil
}

// put writes v whether or not it exists.
func (e *Enforcer) put(p registry.Path, v registry.Value) error {
	err := e.Store.SetValue(p, v, false)
	if isCode(err, proto.CodeRegistryValueNotFound) {
		err = e.Store.SetValue(p, v, true)
	}
	return err
}

func isCode(err error, code string) bool {
	var pe *proto.Error
	return errors.As(err, &pe) && pe.Code == code
}

// Register adds the patch_policy_enforcement_request handler when there
// is a registry (Windows); elsewhere the agent has none and does not
// report the patch_enforcement capability.
func Register(h *runtime.Handlers, store registry.Store, log *slog.Logger) error {
	if store == nil {
		return nil
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	e := &Enforcer{Store: store}
	return h.Register(proto.EventPatchPolicyEnforcement, func(_ context.Context, _ runtime.Caller, payload json.RawMessage) (any, error) {
		var req proto.PatchPolicyEnforcementRequest
		if err := json.Unmarshal(payload, &req); err != nil {
			return nil, &proto.Error{Code: proto.CodeOpInvalid, Message: "the request payload is malformed: " + err.Error()}
		}
		if req.EnforcementID == "" || !slices.Contains(proto.PatchModes, req.Mode) {
			return nil, &proto.Error{Code: proto.CodeOpInvalid,
				Message: "an enforcement names its enforcement_id and a mode of " + strings.Join(proto.PatchModes, ", ")}
		}
		res, err := e.Apply(req.Mode)
		if err != nil {
			log.Warn("patch policy enforcement failed", "enforcement_id", req.EnforcementID, "mode", req.Mode, "err", err)
			var pe *proto.Error
			if errors.As(err, &pe) {
				return nil, pe
			}
			return nil, &proto.Error{Code: proto.CodeOpFailed, Message: err.Error()}
		}
		log.Info("patch policy enforcement", "enforcement_id", req.EnforcementID, "mode", res.Mode, "status", res.Status)
		return res, nil
	})
}
