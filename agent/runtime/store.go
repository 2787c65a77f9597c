package runtime

import (
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/cairn-rmm/cairn/agent"
)

// Store is where the agent keeps its config: agent.json for a real agent,
// memory for a simulated one. Load returns a copy the caller may change
// freely; Update applies fn to the current config and saves the result
// atomically (nothing is saved when fn fails).
type Store interface {
	Load() (*agent.Config, error)
	Update(fn func(*agent.Config) error) (*agent.Config, error)
	// Dir is the directory of the config file, where stale temp files are
	// cleaned; "" for a store without files.
	Dir() string
}

// FileStore is agent.json on disk, written through agent.Update (the lock
// file and atomic rename) under the name of the writing command.
type FileStore struct {
	Path   string
	Writer string
}

func (s FileStore) Load() (*agent.Config, error) { return agent.Load(s.Path) }

func (s FileStore) Update(fn func(*agent.Config) error) (*agent.Config, error) {
	return agent.Update(s.Path, s.Writer, fn)
}

func (s FileStore) Dir() string { return filepath.Dir(s.Path) }

// MemoryStore keeps the config in memory as its canonical JSON: a
// simulated agent's whole state is these couple of kilobytes, and every
// Load parses a private copy exactly like a file read would.
type MemoryStore struct {
	writer string
	now    func() time.Time
	mu     sync.Mutex
	data   []byte
}

// NewMemoryStore stores c (the device key is generated when absent).
func NewMemoryStore(c *agent.Config, writer string) (*MemoryStore, error) {
	s := &MemoryStore{writer: writer, now: time.Now}
	if err := s.save(c); err != nil {
		return nil, err
	}
	return s, nil
}

func (s *MemoryStore) Load() (*agent.Config, error) {
	s.mu.Lock()
	data := s.data
	s.mu.Unlock()
	return agent.Parse(data)
}

func (s *MemoryStore) Update(fn func(*agent.Config) error) (*agent.Config, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, err := agent.Parse(s.data)
	if err != nil {
		return nil, err
	}
	if err := fn(c); err != nil {
		return nil, err
	}
	if err := s.saveLocked(c); err != nil {
		return nil, err
	}
	return c, nil
}

func (s *MemoryStore) Dir() string { return "" }

func (s *MemoryStore) save(c *agent.Config) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.saveLocked(c)
}

// saveLocked mirrors what agent.Update does to a file: key, validation and
// the state stamp.
func (s *MemoryStore) saveLocked(c *agent.Config) error {
	if strings.TrimSpace(s.writer) == "" {
		return errors.New("runtime: memory store needs a writer name")
	}
	c.SchemaVersion = agent.SchemaVersion
	if _, err := c.EnsureKey(); err != nil {
		return err
	}
	if err := c.Validate(); err != nil {
		return err
	}
	c.Agent.State.Revision++
	c.Agent.State.Writer = s.writer
	c.Agent.State.LastWriteAt = s.now().UTC()
	data, err := c.Marshal()
	if err != nil {
		return err
	}
	s.data = data
	return nil
}
