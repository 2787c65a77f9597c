package agent

import (
	"fmt"
	"sort"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/cairn-rmm/cairn/agent/proto"
)

// Metadata field limits (SPEC "Metadata field definition and value").
const (
	MetadataFieldMin = proto.MetadataFieldMin
	MetadataFieldMax = proto.MetadataFieldMax
	MetadataValueMax = proto.MetadataValueMax // characters, not bytes
)

// Metadata is the local metadata queue (SPEC "Agent-side behavior" item 7).
// It lives inside agent.json so the config lock guards it and one atomic
// write covers both.
type Metadata struct {
	// Queued holds writes not yet acknowledged, at most one per field.
	Queued []MetadataEntry `json:"queued"`
	// Acknowledged holds values the Engine accepted, keyed by field number
	// (as a string: JSON object keys). The Engine stays the source of truth;
	// this is only what this agent last knew.
	Acknowledged map[string]MetadataValue `json:"acknowledged"`
	// EngineRevision is the Engine's metadata revision of this device
	// whose operator edits are all in Acknowledged (docs/agent.md
	// "Metadata sync"); sent with every heartbeat.
	EngineRevision int64 `json:"engine_revision,omitempty"`
}

// MetadataEntry is one queued write; an empty Value is a clear.
type MetadataEntry struct {
	FieldNumber int       `json:"field_number"`
	Value       string    `json:"value"`
	ModifiedAt  time.Time `json:"modified_at"`
}

// MetadataValue is an acknowledged value.
type MetadataValue struct {
	Value      string    `json:"value"`
	ModifiedAt time.Time `json:"modified_at"`
}

// MetadataAck is one entry of the Engine's metadata_field_acks: the field
// and the modified_at of the write it accepted or superseded. ModifiedAt must
// echo the value the agent sent, not the Engine's clamped copy: a clamped
// (earlier) time would never cover the queued entry, which would then be
// resent forever.
type MetadataAck struct {
	FieldNumber int
	ModifiedAt  time.Time
	// Superseded: the Engine holds a newer value than the one sent, so the
	// sent value is not what the Engine has.
	Superseded bool
}

// FieldNumberProblem returns "" for a valid field number.
func FieldNumberProblem(n int) string {
	if n < MetadataFieldMin || n > MetadataFieldMax {
		return fmt.Sprintf("field number must be between %d and %d", MetadataFieldMin, MetadataFieldMax)
	}
	return ""
}

// ParseFieldNumber parses a command-line field number.
func ParseFieldNumber(s string) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0, fmt.Errorf("field number %q is not a number", s)
	}
	if p := FieldNumberProblem(n); p != "" {
		return 0, fmt.Errorf("%s (got %d)", p, n)
	}
	return n, nil
}

// MetadataValueProblem returns "" for a value the Engine will accept
// (proto.NormalizeMetadataValue: the rule both sides share).
func MetadataValueProblem(v string) string {
	if _, p := proto.NormalizeMetadataValue(v); p != "" {
		return "value " + p
	}
	return ""
}

func (m *Metadata) validate() error {
	seen := map[int]bool{}
	for _, e := range m.Queued {
		if p := FieldNumberProblem(e.FieldNumber); p != "" {
			return fmt.Errorf("metadata.queued: %s (got %d)", p, e.FieldNumber)
		}
		if seen[e.FieldNumber] {
			return fmt.Errorf("metadata.queued: field %d queued twice", e.FieldNumber)
		}
		seen[e.FieldNumber] = true
		// Only what makes the file unusable: a queued value the Engine
		// refuses (an older agent queued it) is answered with a rejected
		// ack and leaves the queue; refusing the whole file would not.
		if !utf8.ValidString(e.Value) || utf8.RuneCountInString(e.Value) > MetadataValueMax {
			return fmt.Errorf("metadata.queued field %d: value must be valid UTF-8 of at most %d characters", e.FieldNumber, MetadataValueMax)
		}
	}
	for k := range m.Acknowledged {
		n, err := strconv.Atoi(k)
		if err != nil || FieldNumberProblem(n) != "" || strconv.Itoa(n) != k {
			return fmt.Errorf("metadata.acknowledged: bad field number %q", k)
		}
	}
	return nil
}

// SetMetadata queues a write of field n; a blank (whitespace-only) value
// queues a clear. A newer write of the same field replaces the queued one.
// modified_at is UTC at microsecond precision (what the Engine stores) and
// strictly increases per field, so an ack of an older write can never match
// a newer one even when the clock is coarse or steps back.
func (c *Config) SetMetadata(n int, value string, now time.Time) (MetadataEntry, error) {
	if p := FieldNumberProblem(n); p != "" {
		return MetadataEntry{}, fmt.Errorf("%s (got %d)", p, n)
	}
	value, p := proto.NormalizeMetadataValue(value)
	if p != "" {
		return MetadataEntry{}, fmt.Errorf("value %s", p)
	}
	at := now.UTC().Truncate(time.Microsecond)
	floor := time.Time{}
	if v, ok := c.Metadata.Acknowledged[strconv.Itoa(n)]; ok {
		floor = v.ModifiedAt
	}
	i := c.queuedIndex(n)
	if i >= 0 && c.Metadata.Queued[i].ModifiedAt.After(floor) {
		floor = c.Metadata.Queued[i].ModifiedAt
	}
	if !at.After(floor) {
		at = floor.Add(time.Microsecond)
	}
	e := MetadataEntry{FieldNumber: n, Value: value, ModifiedAt: at}
	if i >= 0 {
		c.Metadata.Queued[i] = e
	} else {
		c.Metadata.Queued = append(c.Metadata.Queued, e)
		sort.Slice(c.Metadata.Queued, func(a, b int) bool {
			return c.Metadata.Queued[a].FieldNumber < c.Metadata.Queued[b].FieldNumber
		})
	}
	return e, nil
}

// MetadataSource says where a locally known value came from.
type MetadataSource string

const (
	MetadataQueued       MetadataSource = "queued"       // written locally, not yet acknowledged
	MetadataAcknowledged MetadataSource = "acknowledged" // last value the Engine accepted
	MetadataUnknown      MetadataSource = "unknown"      // nothing known locally
)

// GetMetadata returns the locally known value of field n: the queued write
// if any (it is newer than anything acknowledged), else the acknowledged one.
func (c *Config) GetMetadata(n int) (value string, modifiedAt time.Time, src MetadataSource) {
	if i := c.queuedIndex(n); i >= 0 {
		e := c.Metadata.Queued[i]
		return e.Value, e.ModifiedAt, MetadataQueued
	}
	if v, ok := c.Metadata.Acknowledged[strconv.Itoa(n)]; ok {
		return v.Value, v.ModifiedAt, MetadataAcknowledged
	}
	return "", time.Time{}, MetadataUnknown
}

// PendingMetadata returns copies of the queued writes, in field order, for
// the heartbeat's metadata_fields.
func (c *Config) PendingMetadata() []MetadataEntry {
	return append([]MetadataEntry(nil), c.Metadata.Queued...)
}

// AckMetadata applies the Engine's metadata_field_acks. An entry leaves the
// queue only when the ack covers its modified_at: a newer local write made
// after the heartbeat was sent stays queued for the next one. Accepted values
// become the acknowledged value; a superseded write forgets the local copy,
// since the Engine holds a newer value this agent has not seen. It returns
// how many entries left the queue.
func (c *Config) AckMetadata(acks []MetadataAck) int {
	c.normalize()
	removed := 0
	for _, a := range acks {
		i := c.queuedIndex(a.FieldNumber)
		if i < 0 {
			continue
		}
		e := c.Metadata.Queued[i]
		if e.ModifiedAt.After(a.ModifiedAt) {
			continue
		}
		c.Metadata.Queued = append(c.Metadata.Queued[:i], c.Metadata.Queued[i+1:]...)
		removed++
		key := strconv.Itoa(e.FieldNumber)
		if a.Superseded {
			delete(c.Metadata.Acknowledged, key)
		} else {
			c.Metadata.Acknowledged[key] = MetadataValue{Value: e.Value, ModifiedAt: e.ModifiedAt}
		}
	}
	return removed
}

// SetEngineMetadata stores the Engine's value of field n (read after an
// operator edit) as the acknowledged one, so --metadata get shows it. A
// queued local write stays queued: it is newer, and the Engine decides.
func (c *Config) SetEngineMetadata(n int, value string, modifiedAt time.Time) {
	c.normalize()
	c.Metadata.Acknowledged[strconv.Itoa(n)] = MetadataValue{Value: value, ModifiedAt: modifiedAt.UTC()}
}

// ForgetEngineMetadata drops the acknowledged value of field n (the
// Engine holds none).
func (c *Config) ForgetEngineMetadata(n int) {
	c.normalize()
	delete(c.Metadata.Acknowledged, strconv.Itoa(n))
}

func (c *Config) queuedIndex(n int) int {
	for i, e := range c.Metadata.Queued {
		if e.FieldNumber == n {
			return i
		}
	}
	return -1
}
