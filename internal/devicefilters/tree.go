// Package devicefilters is the one implementation of device filters: the
// filter language (a tree of all/any groups over conditions), its
// validation with JSON-path field names, its compilation to SQL with bound
// parameters, the paged device query the device list and previews use,
// saved filters and saved device-list views. Scheduled jobs, watchdogs
// and patch policies resolve their targets through MatchGUIDs, so a
// filter means the same everywhere.
package devicefilters

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/big"
	"net/netip"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/cairn-rmm/cairn"
)

// Limits of a filter document.
const (
	MaxChildren   = 50
	MaxDepth      = 5
	MaxConditions = 200
	// MaxString bounds a string value (the metadata value limit).
	MaxString = 1024
	// MaxSites bounds a site condition's list.
	MaxSites = 1000
	// MetadataFields is the number of metadata fields (keys 1..500).
	MetadataFields = 500
	maxSoftwareKey = 512
	// maxDuration is 100 years in seconds.
	maxDuration = 100 * 366 * 24 * 3600
)

// Connection statuses, as internal/devices names them.
const (
	Connected    = "Connected"
	Disconnected = "Disconnected"
	Offline      = "Offline"
)

// Node is a filter tree node: a group (Match and Conditions) or a
// condition (Field, Op, and Key and Value as the field needs). A filter
// document is a group. Key is an integer metadata field number or a
// software name; Value is a string, number, array of site IDs or absent,
// as the field and op say. Trees that passed Parse or Validate are in
// canonical form (status canonical, numbers normalized, CIDRs masked).
type Node struct {
	Match      string `json:"match,omitempty"`
	Conditions []Node `json:"conditions,omitempty"`
	Field      string `json:"field,omitempty"`
	Op         string `json:"op,omitempty"`
	Key        any    `json:"key,omitempty"`
	Value      any    `json:"value,omitempty"`
}

// Group matches.
const (
	MatchAll = "all"
	MatchAny = "any"
)

// Value types of ops (GET /api/device_filters/metadata).
const (
	TypeString   = "string"
	TypeNumber   = "number"
	TypeVersion  = "version"
	TypeDuration = "duration_seconds"
	TypeTime     = "time"
	TypeCIDR     = "cidr"
	TypeSiteIDs  = "site_ids"
	TypeEnum     = "enum"
	TypeNone     = "none"
)

// Key types.
const (
	KeyMetadataField = "metadata_field"
	KeySoftwareName  = "software_name"
)

var (
	stringOps  = []string{"equals", "not_equals", "contains", "not_contains", "starts_with", "ends_with", "is_empty", "is_not_empty"}
	versionOps = []string{"version_eq", "version_lt", "version_lte", "version_gt", "version_gte"}
	numberOps  = []string{"eq", "ne", "lt", "lte", "gt", "gte"}
)

// field is one filterable field: its ops and what their values are.
type field struct {
	name, label, group string
	ops                []string
	valueType          string // the main value type, for the builder
	keyType            string
	enum               []string
}

var fields = []field{
	{name: "site", label: "Site", group: "Device", ops: []string{"in", "not_in"}, valueType: TypeSiteIDs},
	{name: "status", label: "Connection status", group: "Device", ops: []string{"is", "is_not"}, valueType: TypeEnum,
		enum: []string{Connected, Disconnected, Offline}},
	{name: "trust_state", label: "Trust state", group: "Device", ops: []string{"is", "is_not"}, valueType: TypeEnum,
		enum: []string{"active", "quarantined", "revoked"}},
	{name: "hostname", label: "Hostname", group: "Device", ops: stringOps, valueType: TypeString},
	{name: "description", label: "Description", group: "Device", ops: stringOps, valueType: TypeString},
	{name: "last_seen", label: "Last seen", group: "Device", ops: []string{"within_last", "not_within_last", "before", "after", "never"},
		valueType: TypeDuration},
	{name: "agent_version", label: "Agent version", group: "Agent", ops: slices.Concat(stringOps, versionOps), valueType: TypeString},
	{name: "os", label: "Operating system", group: "Operating system", ops: stringOps, valueType: TypeString},
	{name: "os_version", label: "OS version", group: "Operating system", ops: slices.Concat(stringOps, versionOps), valueType: TypeString},
	{name: "logged_in_user", label: "Logged-in user", group: "Operating system", ops: stringOps, valueType: TypeString},
	{name: "cpu_model", label: "CPU model", group: "Hardware", ops: stringOps, valueType: TypeString},
	{name: "cpu_cores", label: "CPU cores", group: "Hardware", ops: numberOps, valueType: TypeNumber},
	{name: "memory_total_bytes", label: "Memory (bytes)", group: "Hardware", ops: numberOps, valueType: TypeNumber},
	{name: "disk_total_bytes", label: "Disk size (bytes, all disks)", group: "Hardware", ops: numberOps, valueType: TypeNumber},
	{name: "disk_free_bytes", label: "Disk free (bytes, all disks)", group: "Hardware", ops: numberOps, valueType: TypeNumber},
	{name: "ip_address", label: "IP address", group: "Network", ops: []string{"in_cidr", "not_in_cidr"}, valueType: TypeCIDR},
	{name: "software", label: "Software", group: "Software", ops: slices.Concat([]string{"installed", "not_installed"}, versionOps),
		valueType: TypeVersion, keyType: KeySoftwareName},
	{name: "software_name", label: "Software name", group: "Software", ops: []string{"contains"}, valueType: TypeString},
	{name: "pending_patches", label: "Pending patches", group: "Patches", ops: numberOps, valueType: TypeNumber},
	{name: "metadata", label: "Metadata field", group: "Metadata", ops: stringOps, valueType: TypeString, keyType: KeyMetadataField},
}

func fieldByName(name string) *field {
	for i := range fields {
		if fields[i].name == name {
			return &fields[i]
		}
	}
	return nil
}

// opType is the value type an op of f takes.
func opType(f *field, op string) string {
	switch {
	case op == "is_empty" || op == "is_not_empty" || op == "never" || op == "installed" || op == "not_installed":
		return TypeNone
	case slices.Contains(versionOps, op):
		return TypeVersion
	case op == "within_last" || op == "not_within_last":
		return TypeDuration
	case op == "before" || op == "after":
		return TypeTime
	}
	return f.valueType
}

// cond is a validated condition with its value in typed form.
type cond struct {
	field *field
	op    string
	key   string // software key (lower-cased name)
	str   string // string, version, enum, numeric text
	num   int64  // metadata key, duration seconds
	at    time.Time
	cidr  netip.Prefix
	sites []int64
}

// expr is a validated tree: a group (children) or a condition.
type expr struct {
	any      bool
	children []*expr
	cond     *cond
}

// numberPattern bounds numbers before they are read exactly (an exponent
// of millions would make a huge big.Rat).
var numberPattern = regexp.MustCompile(`^-?[0-9]{1,30}(\.[0-9]{1,20})?([eE][+-]?[0-9]{1,2})?$`)

// versionPattern is what a filter's version value may be: the form
// cairn_version_key reads from stored versions (an optional epoch "N:", an
// optional "v", a dotted number) with any suffix that does not continue the
// number ("5.2.15-2+b8", "3.0.2-0ubuntu1"), so any version the software
// audit shows can be used in a filter. Group 1 is the compared part.
var versionPattern = regexp.MustCompile(`^(?:[0-9]{1,18}:)?[vV]?([0-9]{1,18}(?:\.[0-9]{1,18}){0,19})(?:[^0-9.].*)?$`)

// Parse decodes and validates a filter document. path is where the
// document sits in the request ("filter"); problems are reported under
// JSON paths below it, such as filter.conditions[2].value.
func Parse(raw []byte, path string) (Node, error) {
	_, n, err := parse(raw, path)
	return n, err
}

// Validate checks a decoded tree (one loaded from storage, or built by
// another feature) exactly as Parse does.
func (n Node) Validate(path string) error {
	_, err := n.compileable(path)
	return err
}

func (n Node) compileable(path string) (*expr, error) {
	raw, err := json.Marshal(n)
	if err != nil {
		return nil, cairn.Invalid(path, "is not a filter")
	}
	e, _, err := parse(raw, path)
	return e, err
}

func parse(raw []byte, path string) (*expr, Node, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err != nil || dec.More() {
		return nil, Node{}, cairn.Invalid(path, "must be a JSON filter document")
	}
	p := parser{}
	obj, ok := doc.(map[string]any)
	if !ok || (obj["match"] == nil && obj["conditions"] == nil) {
		return nil, Node{}, cairn.Invalid(path, "must be a group: {\"match\": \"all\"|\"any\", \"conditions\": [...]}")
	}
	e, n := p.node(doc, path, 1)
	if p.err == nil && p.conditions > MaxConditions {
		p.fail(path, fmt.Sprintf("must have at most %d conditions in all", MaxConditions))
	}
	if p.err != nil {
		return nil, Node{}, p.err
	}
	return e, n, nil
}

// parser walks a decoded document, stopping at the first problem so the
// error names exactly one node.
type parser struct {
	err        error
	conditions int
}

func (p *parser) fail(path, problem string) {
	if p.err == nil {
		p.err = cairn.Invalid(path, problem)
	}
}

func (p *parser) node(v any, path string, depth int) (*expr, Node) {
	obj, ok := v.(map[string]any)
	if !ok {
		p.fail(path, "must be a group or a condition object")
		return nil, Node{}
	}
	if _, group := obj["match"]; group {
		return p.group(obj, path, depth)
	}
	if _, group := obj["conditions"]; group {
		return p.group(obj, path, depth)
	}
	if _, ok := obj["field"]; ok {
		return p.condition(obj, path)
	}
	p.fail(path, "must be a group (match, conditions) or a condition (field, op, value)")
	return nil, Node{}
}

func (p *parser) group(obj map[string]any, path string, depth int) (*expr, Node) {
	for k := range obj {
		if k != "match" && k != "conditions" {
			p.fail(path+"."+k, "is not a group key (match, conditions)")
			return nil, Node{}
		}
	}
	if depth > MaxDepth {
		p.fail(path, fmt.Sprintf("nests groups too deep (at most %d levels)", MaxDepth))
		return nil, Node{}
	}
	match, _ := obj["match"].(string)
	if match != MatchAll && match != MatchAny {
		p.fail(path+".match", "must be all or any")
		return nil, Node{}
	}
	list, ok := obj["conditions"].([]any)
	if !ok || len(list) == 0 || len(list) > MaxChildren {
		p.fail(path+".conditions", fmt.Sprintf("must be a list of 1 to %d conditions or groups", MaxChildren))
		return nil, Node{}
	}
	e := &expr{any: match == MatchAny}
	n := Node{Match: match, Conditions: make([]Node, 0, len(list))}
	for i, c := range list {
		ce, cn := p.node(c, fmt.Sprintf("%s.conditions[%d]", path, i), depth+1)
		if p.err != nil {
			return nil, Node{}
		}
		e.children = append(e.children, ce)
		n.Conditions = append(n.Conditions, cn)
	}
	return e, n
}

func (p *parser) condition(obj map[string]any, path string) (*expr, Node) {
	p.conditions++
	for k := range obj {
		if k != "field" && k != "op" && k != "key" && k != "value" {
			p.fail(path+"."+k, "is not a condition key (field, op, key, value)")
			return nil, Node{}
		}
	}
	name, _ := obj["field"].(string)
	f := fieldByName(name)
	if f == nil {
		p.fail(path+".field", "is not a filter field")
		return nil, Node{}
	}
	op, _ := obj["op"].(string)
	if !slices.Contains(f.ops, op) {
		p.fail(path+".op", fmt.Sprintf("must be one of %s for %s", strings.Join(f.ops, ", "), f.name))
		return nil, Node{}
	}
	c := &cond{field: f, op: op}
	n := Node{Field: f.name, Op: op}
	key, hasKey := obj["key"]
	switch f.keyType {
	case KeyMetadataField:
		num, ok := key.(json.Number)
		k, err := num.Int64()
		if !ok || err != nil || k < 1 || k > MetadataFields {
			p.fail(path+".key", fmt.Sprintf("must be a metadata field number from 1 to %d", MetadataFields))
			return nil, Node{}
		}
		c.num, n.Key = k, k
	case KeySoftwareName:
		s, ok := key.(string)
		s = strings.TrimSpace(s)
		if !ok || s == "" || len(s) > maxSoftwareKey || !utf8.ValidString(s) {
			p.fail(path+".key", fmt.Sprintf("must be a software name of 1 to %d characters", maxSoftwareKey))
			return nil, Node{}
		}
		n.Key = s
	default:
		if hasKey {
			p.fail(path+".key", "is only for metadata and software conditions")
			return nil, Node{}
		}
	}
	value, hasValue := obj["value"]
	vpath := path + ".value"
	typ := opType(f, op)
	if typ == TypeNone {
		if hasValue && value != nil {
			p.fail(vpath, "must be absent for "+op)
			return nil, Node{}
		}
		if f.keyType == KeySoftwareName {
			c.key = softwareKey(n.Key.(string))
		}
		return &expr{cond: c}, n
	}
	if !hasValue || value == nil {
		p.fail(vpath, "is required for "+op)
		return nil, Node{}
	}
	var problem string
	switch typ {
	case TypeString:
		s, ok := value.(string)
		if !ok || len([]rune(s)) > MaxString || !utf8.ValidString(s) || strings.ContainsRune(s, 0) {
			problem = fmt.Sprintf("must be a string of at most %d characters", MaxString)
			break
		}
		c.str, n.Value = s, s
		if f.name == "software_name" {
			c.str = strings.ToLower(s)
		}
	case TypeVersion:
		s, ok := value.(string)
		s = strings.TrimSpace(s)
		if !ok || !versionPattern.MatchString(s) {
			problem = "must be a version starting with a dotted number, such as 1.2.3 or 5.2.15-2+b8"
			break
		}
		c.str, n.Value = s, s
	case TypeNumber:
		num, ok := value.(json.Number)
		if !ok || !numberPattern.MatchString(string(num)) {
			problem = "must be a number of at least 0"
			break
		}
		r, valid := new(big.Rat).SetString(string(num))
		if !valid || r.Sign() < 0 {
			problem = "must be a number of at least 0"
			break
		}
		// The canonical text is the exact decimal, bound as numeric.
		text := r.FloatString(decimals(r))
		c.str, n.Value = text, json.Number(text)
	case TypeDuration:
		num, ok := value.(json.Number)
		secs, err := num.Int64()
		if !ok || err != nil || secs <= 0 || secs > maxDuration {
			problem = "must be a whole number of seconds above 0"
			break
		}
		c.num, n.Value = secs, secs
	case TypeTime:
		s, _ := value.(string)
		at, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			problem = "must be an RFC 3339 time such as 2030-01-02T03:04:05Z"
			break
		}
		c.at, n.Value = at.UTC(), at.UTC().Format(time.RFC3339Nano)
	case TypeCIDR:
		s, _ := value.(string)
		pfx, err := parseCIDR(s)
		if err != nil {
			problem = "must be a CIDR such as 10.0.0.0/8 or an address such as 192.168.1.5"
			break
		}
		c.cidr = pfx
		if pfx.IsSingleIP() {
			n.Value = pfx.Addr().String()
		} else {
			n.Value = pfx.String()
		}
	case TypeSiteIDs:
		list, ok := value.([]any)
		if !ok || len(list) == 0 || len(list) > MaxSites {
			problem = fmt.Sprintf("must be a list of 1 to %d site IDs", MaxSites)
			break
		}
		for _, item := range list {
			num, _ := item.(json.Number)
			id, err := num.Int64()
			if err != nil || id <= 0 {
				problem = "must be a list of site IDs (positive integers)"
				break
			}
			c.sites = append(c.sites, id)
		}
		slices.Sort(c.sites)
		c.sites = slices.Compact(c.sites)
		n.Value = c.sites
	case TypeEnum:
		s, _ := value.(string)
		for _, e := range f.enum {
			if strings.EqualFold(strings.TrimSpace(s), e) {
				c.str = e
			}
		}
		if c.str == "" {
			problem = "must be one of " + strings.Join(f.enum, ", ")
			break
		}
		n.Value = c.str
	}
	if problem != "" {
		p.fail(vpath, problem)
		return nil, Node{}
	}
	if f.keyType == KeySoftwareName {
		c.key = softwareKey(n.Key.(string))
	}
	return &expr{cond: c}, n
}

// decimals is how many decimal places r needs exactly (r came from
// decimal text, so its expansion terminates).
func decimals(r *big.Rat) int {
	x := new(big.Rat).Set(r)
	for d := 0; d < 64; d++ {
		if x.IsInt() {
			return d
		}
		x.Mul(x, big.NewRat(10, 1))
	}
	return 64
}

func parseCIDR(s string) (netip.Prefix, error) {
	s = strings.TrimSpace(s)
	if strings.Contains(s, "/") {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return netip.Prefix{}, err
		}
		if p.Addr().Is4In6() && p.Bits() >= 96 {
			p = netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-96)
		}
		return p.Masked(), nil
	}
	a, err := netip.ParseAddr(s)
	if err != nil || a.Zone() != "" {
		return netip.Prefix{}, fmt.Errorf("not an address")
	}
	a = a.Unmap()
	return netip.PrefixFrom(a, a.BitLen()), nil
}

func softwareKey(name string) string { return strings.ToLower(strings.TrimSpace(name)) }

// versionKey is cairn_version_key (migration 00015) of a validated filter
// version, as a PostgreSQL numeric[] literal: the dotted number (without
// epoch, "v" or suffix) without leading zeros, trailing zero parts dropped
// (the first part stays).
func versionKey(v string) string {
	core := strings.TrimSpace(v)
	if m := versionPattern.FindStringSubmatch(core); m != nil {
		core = m[1]
	}
	parts := strings.Split(core, ".")
	for i, p := range parts {
		if parts[i] = strings.TrimLeft(p, "0"); parts[i] == "" {
			parts[i] = "0"
		}
	}
	for len(parts) > 1 && parts[len(parts)-1] == "0" {
		parts = parts[:len(parts)-1]
	}
	return "{" + strings.Join(parts, ",") + "}"
}
