// Package registrytest is an in-memory registry.Store: the Engine's API
// tests drive the real registry handler with it on Linux, where the real
// registry does not exist (the real store is tested under Wine:
// registry_windows_test.go).
package registrytest

import (
	"fmt"
	"strings"
	"sync"

	"github.com/cairn-rmm/cairn/agent/registry"
)

// Mem is a registry held in memory, with the five roots and, as on
// every Windows machine, HKLM\Software and HKCU\Software. Names compare case-insensitively, as Windows compares them.
type Mem struct {
	mu   sync.Mutex
	keys map[string]*node // lower-cased full path -> key
}

type node struct {
	name   string
	values map[string]registry.Value // lower-cased name -> value
}

// New returns an empty registry.
func New() *Mem {
	m := &Mem{keys: map[string]*node{}}
	for _, r := range registry.Roots {
		m.keys[strings.ToLower(r.Path)] = &node{name: r.Path, values: map[string]registry.Value{}}
	}
	for _, p := range []string{`hklm\software`, `hkcu\software`} {
		m.keys[p] = &node{name: "Software", values: map[string]registry.Value{}}
	}
	return m
}

func lower(p registry.Path) string { return strings.ToLower(p.String()) }

func (m *Mem) get(p registry.Path) (*node, error) {
	n, ok := m.keys[lower(p)]
	if !ok {
		return nil, registry.KeyNotFound(p)
	}
	return n, nil
}

// below lists the lower-cased paths under p, p excluded.
func (m *Mem) below(p registry.Path) []string {
	var out []string
	prefix := lower(p) + `\`
	for k := range m.keys {
		if strings.HasPrefix(k, prefix) {
			out = append(out, k)
		}
	}
	return out
}

func (m *Mem) Children(p registry.Path) ([]string, []registry.Value, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n, err := m.get(p)
	if err != nil {
		return nil, nil, err
	}
	var names []string
	depth := strings.Count(lower(p), `\`) + 1
	for _, k := range m.below(p) {
		if strings.Count(k, `\`) == depth {
			names = append(names, m.keys[k].name)
		}
	}
	values := make([]registry.Value, 0, len(n.values))
	for _, v := range n.values {
		values = append(values, v)
	}
	return names, values, nil
}

func (m *Mem) CreateKey(p registry.Path) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, err := m.get(p.Parent()); err != nil {
		return err
	}
	if _, ok := m.keys[lower(p)]; ok {
		return registry.Exists("key " + p.String())
	}
	m.keys[lower(p)] = &node{name: p.Name(), values: map[string]registry.Value{}}
	return nil
}

func (m *Mem) RenameKey(p registry.Path, newName string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	n, err := m.get(p)
	if err != nil {
		return err
	}
	to := p.Parent().Child(newName)
	if _, ok := m.keys[lower(to)]; ok {
		return registry.Exists("key " + to.String())
	}
	from := lower(p)
	for _, k := range append(m.below(p), from) {
		moved := lower(to) + k[len(from):]
		m.keys[moved] = m.keys[k]
		delete(m.keys, k)
	}
	n.name = newName
	return nil
}

func (m *Mem) DeleteKey(p registry.Path) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, err := m.get(p); err != nil {
		return err
	}
	for _, k := range append(m.below(p), lower(p)) {
		delete(m.keys, k)
	}
	return nil
}

func (m *Mem) SetValue(p registry.Path, v registry.Value, create bool) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	n, err := m.get(p)
	if err != nil {
		return err
	}
	_, ok := n.values[strings.ToLower(v.Name)]
	switch {
	case ok && create:
		return registry.Exists(fmt.Sprintf("value %q in %s", v.Name, p))
	case !ok && !create:
		return registry.ValueNotFound(p, v.Name)
	}
	n.values[strings.ToLower(v.Name)] = v
	return nil
}

func (m *Mem) DeleteValue(p registry.Path, name string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	n, err := m.get(p)
	if err != nil {
		return err
	}
	if _, ok := n.values[strings.ToLower(name)]; !ok {
		return registry.ValueNotFound(p, name)
	}
	delete(n.values, strings.ToLower(name))
	return nil
}

var _ registry.Store = (*Mem)(nil)
