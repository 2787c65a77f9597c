package enforce_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn/agent/patches/enforce"
	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/agent/registry"
	"github.com/cairn-rmm/cairn/agent/runtime"
)

// snapshot is every key and value under HKLM\SOFTWARE\Policies and the
// agent's own key, as sorted lines ("absent" for a missing key).
func snapshot(t *testing.T, s registry.Store) []string {
	t.Helper()
	var out []string
	var walk func(p registry.Path)
	walk = func(p registry.Path) {
		names, values, err := s.Children(p)
		var pe *proto.Error
		if errors.As(err, &pe) && pe.Code == proto.CodeRegistryKeyNotFound {
			out = append(out, p.String()+" absent")
			return
		}
		require.NoError(t, err)
		out = append(out, p.String())
		for _, v := range values {
			w := registry.Wire(v)
			out = append(out, fmt.Sprintf("%s\\%s %s %v", p, v.Name, w.Type, w.Data))
		}
		for _, n := range names {
			walk(p.Child(n))
		}
	}
	walk(registry.Path{Root: "HKLM", Sub: `SOFTWARE\Policies`})
	walk(enforce.BackupKey.Parent())
	sort.Strings(out)
	return out
}

func mustPath(t *testing.T, s string) registry.Path {
	t.Helper()
	p, err := registry.ParsePath("path", s)
	require.NoError(t, err)
	return p
}

// mkKey creates p and its parents.
func mkKey(t *testing.T, s registry.Store, p registry.Path) {
	t.Helper()
	if p.Sub == "" {
		return
	}
	if _, _, err := s.Children(p); err == nil {
		return
	}
	mkKey(t, s, p.Parent())
	require.NoError(t, s.CreateKey(p))
}

func set(t *testing.T, s registry.Store, p registry.Path, v registry.Value) {
	t.Helper()
	mkKey(t, s, p)
	require.NoError(t, s.SetValue(p, v, true))
}

// dword reads one DWORD (false: absent).
func dword(t *testing.T, s registry.Store, p registry.Path, name string) (uint32, bool) {
	t.Helper()
	_, values, err := s.Children(p)
	if err != nil {
		return 0, false
	}
	for _, v := range values {
		if v.Name == name {
			d, ok := v.Data.(uint32)
			require.True(t, ok, "%s is a DWORD", name)
			return d, true
		}
	}
	return 0, false
}

// Managed and frozen set the values that stop automatic installs, keeping
// a backup of what was there; unmanaged restores exactly that (values and
// keys that did not exist included), from a new Enforcer as after an
// agent restart, whatever modes came between.
func TestEnforcementRestoresExactly(t *testing.T) {
	for _, tc := range []struct {
		name string
		// before populates the registry as an administrator left it.
		before func(t *testing.T, s registry.Store)
		modes  []string
	}{
		{"no policy keys", func(*testing.T, registry.Store) {}, []string{proto.PatchModeManaged}},
		{"the agent's parent key exists, empty", func(t *testing.T, s registry.Store) {
			mkKey(t, s, enforce.BackupKey.Parent())
		}, []string{proto.PatchModeManaged}},
		{"no policy keys, frozen then managed", func(*testing.T, registry.Store) {},
			[]string{proto.PatchModeFrozen, proto.PatchModeManaged, proto.PatchModeFrozen}},
		{"policies of an administrator", func(t *testing.T, s registry.Store) {
			set(t, s, enforce.AUKey, registry.Value{Name: "NoAutoUpdate", Type: registry.TypeDWord, Data: uint32(0)})
			set(t, s, enforce.AUKey, registry.Value{Name: "AUOptions", Type: registry.TypeDWord, Data: uint32(4)})
			set(t, s, enforce.AUKey, registry.Value{Name: "ScheduledInstallDay", Type: registry.TypeDWord, Data: uint32(3)})
			set(t, s, enforce.WindowsUpdateKey, registry.Value{Name: "WUServer", Type: registry.TypeSZ, Data: "http://wsus.example:8530"})
		}, []string{proto.PatchModeManaged, proto.PatchModeFrozen}},
		{"an odd type and only the parent key", func(t *testing.T, s registry.Store) {
			set(t, s, enforce.WindowsUpdateKey, registry.Value{Name: "ElevateNonAdmins", Type: registry.TypeDWord, Data: uint32(1)})
			mkKey(t, s, enforce.AUKey)
			set(t, s, enforce.AUKey, registry.Value{Name: "AUOptions", Type: registry.TypeSZ, Data: "3"})
		}, []string{proto.PatchModeFrozen}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newStore(t)
			tc.before(t, s)
			want := snapshot(t, s)
			for _, mode := range tc.modes {
				res, err := (&enforce.Enforcer{Store: s}).Apply(mode)
				require.NoError(t, err)
				require.Equal(t, proto.PatchEnforcementApplied, res.Status)
				require.Equal(t, mode, res.Mode)
				for _, set := range enforce.Settings(mode) {
					got, ok := dword(t, s, set.Key, set.Name)
					require.True(t, ok, set.Name)
					require.Equal(t, set.Data, got, "%s in %s", set.Name, mode)
				}
				m, err := (&enforce.Enforcer{Store: s}).Mode()
				require.NoError(t, err)
				require.Equal(t, mode, m)
				require.Len(t, res.Values, len(enforce.Managed()))
			}
			// Values an administrator set that Cairn does not manage stay.
			if _, ok := dword(t, s, enforce.AUKey, "ScheduledInstallDay"); tc.name == "policies of an administrator" {
				require.True(t, ok)
			}

			res, err := (&enforce.Enforcer{Store: s}).Apply(proto.PatchModeUnmanaged)
			require.NoError(t, err)
			require.Equal(t, proto.PatchEnforcementRestored, res.Status)
			require.Equal(t, want, snapshot(t, s), "unmanaged restores exactly what was there")
			m, err := (&enforce.Enforcer{Store: s}).Mode()
			require.NoError(t, err)
			require.Equal(t, proto.PatchModeUnmanaged, m)

			// Again: nothing to restore, nothing changes.
			res, err = (&enforce.Enforcer{Store: s}).Apply(proto.PatchModeUnmanaged)
			require.NoError(t, err)
			require.Equal(t, proto.PatchEnforcementNotManaged, res.Status)
			require.Equal(t, want, snapshot(t, s))
		})
	}
}

// Managing twice keeps the first backup, so a value Windows Update policy
// had before Cairn is what comes back, not Cairn's own; a key Cairn
// created that someone has since put a value in is kept.
func TestEnforcementKeepsTheFirstBackup(t *testing.T) {
	s := newStore(t)
	set(t, s, enforce.AUKey, registry.Value{Name: "AUOptions", Type: registry.TypeDWord, Data: uint32(4)})
	e := &enforce.Enforcer{Store: s}
	_, err := e.Apply(proto.PatchModeManaged)
	require.NoError(t, err)
	_, err = e.Apply(proto.PatchModeManaged)
	require.NoError(t, err)
	// Someone adds a value Cairn does not manage while it is managed.
	require.NoError(t, s.SetValue(enforce.AUKey, registry.Value{Name: "DetectionFrequency", Type: registry.TypeDWord, Data: uint32(22)}, true))
	_, err = e.Apply(proto.PatchModeUnmanaged)
	require.NoError(t, err)
	got, ok := dword(t, s, enforce.AUKey, "AUOptions")
	require.True(t, ok)
	require.Equal(t, uint32(4), got)
	_, ok = dword(t, s, enforce.AUKey, "NoAutoUpdate")
	require.False(t, ok, "a value that did not exist is deleted again")
	got, ok = dword(t, s, enforce.AUKey, "DetectionFrequency")
	require.True(t, ok, "what others added stays")
	require.Equal(t, uint32(22), got)
	_, _, err = s.Children(enforce.BackupKey)
	require.Error(t, err, "the backup is gone")
}

// The handler checks the request and answers the enforcement's result.
func TestEnforcementHandler(t *testing.T) {
	s := newStore(t)
	h := runtime.NewHandlers()
	require.NoError(t, enforce.Register(h, s, nil))
	call := h.Lookup(proto.EventPatchPolicyEnforcement)
	require.NotNil(t, call)
	for _, bad := range []string{`nonsense`, `{"enforcement_id":"e1","mode":"paused"}`, `{"mode":"managed"}`} {
		_, err := call(context.Background(), nil, json.RawMessage(bad))
		var pe *proto.Error
		require.True(t, errors.As(err, &pe), bad)
		require.Equal(t, proto.CodeOpInvalid, pe.Code, bad)
	}
	out, err := call(context.Background(), nil, json.RawMessage(`{"enforcement_id":"e1","mode":"frozen"}`))
	require.NoError(t, err)
	res := out.(proto.PatchPolicyEnforcementResult)
	require.Equal(t, proto.PatchEnforcementApplied, res.Status)
	require.Contains(t, res.Values, proto.PatchPolicyValue{Key: enforce.AUKey.String(), Name: "NoAutoUpdate", Present: true, Type: "REG_DWORD", Data: uint32(1)})

	none := runtime.NewHandlers()
	require.NoError(t, enforce.Register(none, nil, nil))
	require.Nil(t, none.Lookup(proto.EventPatchPolicyEnforcement), "no registry, no handler")
}
