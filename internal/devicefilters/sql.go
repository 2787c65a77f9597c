package devicefilters

// This file is the one place outside db/queries that holds SQL
// (docs/architecture.md "Device filters"): a filter tree is built by the
// operator, so it cannot be a static sqlc query. Everything here is a
// fixed fragment; the compiler only chooses fragments by field and op and
// joins them with AND/OR. Every value, key and time goes to PostgreSQL as
// a bound parameter ($n), so the SQL text depends on the shape of the tree
// alone (TestCompiledSQLDependsOnShapeOnly proves it).

import (
	"fmt"
	"strings"
	"time"
)

// Subjects: the device-side expression a condition looks at. Inventory
// fields read the joined device_inventory row i (absent: NULL, so only
// string fields, coalesced to ”, can match "is empty").
const (
	sqlHostname     = `d.hostname`
	sqlDescription  = `d.description`
	sqlOS           = `d.operating_system`
	sqlAgentVersion = `d.agent_version`
	// The same strings in device_filter_rows, lower-cased.
	sqlHostnameLower     = `d.hostname_lower`
	sqlDescriptionLower  = `d.description_lower`
	sqlOSLower           = `d.operating_system_lower`
	sqlAgentVersionLower = `d.agent_version_lower`
	sqlOSVersion         = `coalesce(i.os->>'version', '')`
	sqlCPUModel          = `coalesce(i.hardware->>'cpu_model', '')`
	// convert_from's result takes the "C" collation of its encoding-name
	// argument, under which lower() leaves non-ASCII letters alone.
	sqlMetadata = `coalesce((SELECT convert_from(decode(m.value_b64, 'base64'), 'UTF8') COLLATE "default" FROM device_metadata_values m WHERE m.device_guid = d.guid AND m.field_number = %s::int), '')`

	sqlAgentVersionKey = `d.agent_version_key`
	sqlOSVersionKey    = `i.os_version_key`

	sqlCPUCores    = `(i.hardware->>'cpu_cores')::numeric`
	sqlMemoryTotal = `(i.hardware->>'memory_total_bytes')::numeric`
	sqlDiskSum     = `CASE WHEN i.hardware IS NULL THEN NULL ELSE (SELECT coalesce(sum(coalesce((x->>'%s')::numeric, 0)), 0) FROM jsonb_array_elements(CASE WHEN jsonb_typeof(i.hardware->'disks') = 'array' THEN i.hardware->'disks' ELSE '[]'::jsonb END) x) END`
	sqlPending     = `(SELECT count(*) FROM device_patches p WHERE p.device_guid = d.guid AND p.state = 'pending')`

	// sqlLoggedInUsers ranges over the last heartbeat's users as u.v.
	sqlLoggedInUsers = `EXISTS (SELECT 1 FROM jsonb_array_elements_text(CASE WHEN jsonb_typeof(d.metrics->'logged_in_users') = 'array' THEN d.metrics->'logged_in_users' ELSE '[]'::jsonb END) u(v) WHERE %s)`
	sqlUser          = `u.v`

	// Software and address conditions are semi-joins on indexes
	// ((name_key, version_key) and the GiST on address), not per-device
	// probes. Version values arrive as their key (versionKey), the same
	// key cairn_version_key gives stored versions.
	sqlSoftware        = `d.guid IN (SELECT sw.device_guid FROM device_software sw WHERE sw.name_key = %s::text)`
	sqlSoftwareVersion = `d.guid IN (SELECT sw.device_guid FROM device_software sw WHERE sw.name_key = %s::text AND sw.version_key %s %s::text::numeric[])`
	// sqlSoftwareName finds the matching names first (a loose scan of the
	// name index: one probe per distinct name), then their devices.
	sqlSoftwareName = `d.guid IN (SELECT sw.device_guid FROM device_software sw WHERE sw.name_key = ANY(ARRAY(
    WITH RECURSIVE names AS (
        SELECT min(name_key) AS k FROM device_software
        UNION ALL
        SELECT (SELECT min(s.name_key) FROM device_software s WHERE s.name_key > names.k) FROM names WHERE names.k IS NOT NULL)
    SELECT k FROM names WHERE k IS NOT NULL AND strpos(k, %s::text) > 0)))`
	sqlAddress = `d.guid IN (SELECT a.device_guid FROM device_addresses a WHERE a.address <<= %s::inet)`
)

// String predicates (case-insensitive) on subject %[1]s and value %[2]s;
// the negative ops are NOT of these.
var stringPredicates = map[string]string{
	"equals":       `lower(%[1]s) = lower(%[2]s::text)`,
	"contains":     `strpos(lower(%[1]s), lower(%[2]s::text)) > 0`,
	"starts_with":  `starts_with(lower(%[1]s), lower(%[2]s::text))`,
	"ends_with":    `right(lower(%[1]s), char_length(lower(%[2]s::text))) = lower(%[2]s::text)`,
	"is_not_empty": `%[1]s <> ''`,
}

// loweredPredicates are stringPredicates for a subject stored as
// lower(column) (device_filter_rows): the same value the devices
// fragments compute per row, computed once at write instead. The value
// is folded in a scalar subquery, evaluated once per execution: a
// prepared statement's generic plan (pgx caches statements) cannot fold
// lower($n) and would call it on every row.
var loweredPredicates = map[string]string{
	"equals":       `%[1]s = (SELECT lower(%[2]s::text))`,
	"contains":     `strpos(%[1]s, (SELECT lower(%[2]s::text))) > 0`,
	"starts_with":  `starts_with(%[1]s, (SELECT lower(%[2]s::text)))`,
	"ends_with":    `right(%[1]s, (SELECT char_length(lower(%[2]s::text)))) = (SELECT lower(%[2]s::text))`,
	"is_not_empty": `%[1]s <> ''`,
}

var negatedStringOps = map[string]string{"not_equals": "equals", "not_contains": "contains", "is_empty": "is_not_empty"}

var comparisons = map[string]string{
	"eq": "=", "ne": "<>", "lt": "<", "lte": "<=", "gt": ">", "gte": ">=",
	"version_eq": "=", "version_lt": "<", "version_lte": "<=", "version_gt": ">", "version_gte": ">=",
}

// Connection status (internal/devices/connectivity.go): online while the
// last heartbeat is no older than the online window, with a live socket
// while the socket was confirmed within SocketWindow. The two cutoffs
// are parameters computed from now.
const (
	sqlOnline = `coalesce(d.last_seen >= %s::timestamptz, false)`
	sqlSocket = `coalesce(d.socket_replica <> '' AND d.socket_seen_at >= %s::timestamptz, false)`
	// sqlStatusRank orders Connected, Disconnected, Offline.
	sqlStatusRank = `CASE WHEN %[1]s AND %[2]s THEN 0 WHEN %[1]s THEN 1 ELSE 2 END`
)

const (
	sqlTrustState = `d.trust_state = %s::text`
	sqlSiteIn     = `d.site_id = ANY(%s::bigint[])`
	sqlSiteIs     = `d.site_id = %s::bigint`
	sqlLastSeen   = `coalesce(d.last_seen %s %s::timestamptz, false)`
	sqlNever      = `d.last_seen IS NULL`
	sqlCompare    = `coalesce(%s %s %s::numeric, false)`
	sqlVersionCmp = `coalesce(%s %s %s::text::numeric[], false)`
	sqlNot        = `NOT %s`
	// The scope is one of two fragments rather than one with a bound
	// "all sites" flag: a prepared statement's generic plan (pgx caches
	// statements; PostgreSQL switches to a generic plan after five runs)
	// cannot fold ($1 OR site_id = ANY($2)), so a site-limited operator's
	// count scanned every device instead of its sites' (issue 9 bench).
	sqlScope    = `d.site_id = ANY(%s::bigint[])`
	sqlAllSites = `true`
)

// Queries.
const (
	sqlRowColumns = `d.guid, d.agent_id, d.hostname, d.description, d.site_id, s.name, s.slug, d.last_seen, d.socket_replica,
       d.socket_seen_at, d.operating_system, d.agent_version, d.agent_build_id, d.trust_state, d.boot_id, d.helper_contexts,
       d.metrics, d.enrolled_at`
	sqlFromDevices = ` FROM devices d JOIN sites s ON s.id = d.site_id`
	sqlFromCount   = `SELECT count(*) FROM devices d`
	// sqlFromCountRows counts over device_filter_rows, the trigger-kept
	// copy of the columns conditions read, its strings lower-cased
	// (migration 00024): a total visits every device in scope, and the
	// narrow rows are a fraction of the wide devices rows to read and
	// need no case folding. Only logged_in_user reads a column it lacks
	// (metrics).
	sqlFromCountRows = `SELECT count(*) FROM device_filter_rows d`
	sqlJoinInventory = ` LEFT JOIN device_inventory i ON i.device_guid = d.guid`
	sqlWhere         = ` WHERE `
	sqlAnd           = ` AND `
	sqlOr            = ` OR `
	sqlOrderBy       = ` ORDER BY `
	sqlLimitOffset   = ` LIMIT %s::int OFFSET %s::int`
	sqlSelectRefs    = `SELECT d.guid, d.hostname, d.site_id FROM devices d`
	sqlOrderByGUID   = ` ORDER BY d.guid`
)

// Sort keys, each followed by the GUID tie-break in the same direction.
var sortKeys = map[string]string{
	"hostname":      `lower(d.hostname) %[1]s, d.guid %[1]s`,
	"site":          `lower(s.name) %[1]s, d.guid %[1]s`,
	"os":            `lower(d.operating_system) %[1]s, d.guid %[1]s`,
	"description":   `lower(d.description) %[1]s, d.guid %[1]s`,
	"trust_state":   `d.trust_state %[1]s, d.guid %[1]s`,
	"agent_version": `d.agent_version_key %[1]s %[2]s, lower(d.agent_version) %[1]s, d.guid %[1]s`,
	// Never seen counts as oldest.
	"last_seen": `d.last_seen %[1]s %[2]s, d.guid %[1]s`,
	// The status and metadata keys get their subject as %[3]s.
	"status":   `%[3]s %[1]s, d.guid %[1]s`,
	"metadata": `lower(%[3]s) %[1]s, d.guid %[1]s`,
}

var directions = map[bool][2]string{false: {"ASC", "NULLS FIRST"}, true: {"DESC", "NULLS LAST"}}

// query accumulates bound parameters; the SQL text only ever receives
// their placeholders.
type query struct {
	args      []any
	inventory bool
	// rows: d is device_filter_rows (a count), not devices.
	rows bool
	// metrics: a condition reads d.metrics, which only devices has.
	metrics bool
	now     time.Time
	online  string
	socket  string
	cutoffs [2]time.Time
}

func (q *query) arg(v any) string {
	q.args = append(q.args, v)
	return fmt.Sprintf("$%d", len(q.args))
}

// onlineExpr and socketExpr bind their cutoff once per query, when first
// used (a parameter the SQL never mentions would have no type).
func (q *query) onlineExpr() string {
	if q.online == "" {
		q.online = fmt.Sprintf(sqlOnline, q.arg(q.cutoffs[0]))
	}
	return q.online
}

func (q *query) socketExpr() string {
	if q.socket == "" {
		q.socket = fmt.Sprintf(sqlSocket, q.arg(q.cutoffs[1]))
	}
	return q.socket
}

func (q *query) status(st string) string {
	switch st {
	case Connected:
		return "(" + q.onlineExpr() + sqlAnd + q.socketExpr() + ")"
	case Disconnected:
		return "(" + q.onlineExpr() + sqlAnd + fmt.Sprintf(sqlNot, q.socketExpr()) + ")"
	}
	return fmt.Sprintf(sqlNot, q.onlineExpr())
}

func (q *query) expr(e *expr) string {
	if e.cond != nil {
		return q.cond(e.cond)
	}
	parts := make([]string, len(e.children))
	for i, c := range e.children {
		parts[i] = q.expr(c)
	}
	sep := sqlAnd
	if e.any {
		sep = sqlOr
	}
	return "(" + strings.Join(parts, sep) + ")"
}

func (q *query) cond(c *cond) string {
	not := func(s string) string { return fmt.Sprintf(sqlNot, "("+s+")") }
	switch c.field.name {
	case "site":
		s := fmt.Sprintf(sqlSiteIn, q.arg(c.sites))
		if c.op == "not_in" {
			return not(s)
		}
		return s
	case "status":
		s := q.status(c.str)
		if c.op == "is_not" {
			return not(s)
		}
		return s
	case "trust_state":
		s := fmt.Sprintf(sqlTrustState, q.arg(c.str))
		if c.op == "is_not" {
			return not(s)
		}
		return s
	case "last_seen":
		switch c.op {
		case "never":
			return sqlNever
		case "before":
			return fmt.Sprintf(sqlLastSeen, "<", q.arg(c.at))
		case "after":
			return fmt.Sprintf(sqlLastSeen, ">", q.arg(c.at))
		}
		s := fmt.Sprintf(sqlLastSeen, ">=", q.arg(ceilMicro(q.now.Add(-time.Duration(c.num)*time.Second))))
		if c.op == "not_within_last" {
			return not(s)
		}
		return s
	case "cpu_cores", "memory_total_bytes", "disk_total_bytes", "disk_free_bytes", "pending_patches":
		return fmt.Sprintf(sqlCompare, q.number(c.field.name), comparisons[c.op], q.arg(c.str))
	case "ip_address":
		s := fmt.Sprintf(sqlAddress, q.arg(c.cidr))
		if c.op == "not_in_cidr" {
			return not(s)
		}
		return s
	case "software":
		switch c.op {
		case "installed":
			return fmt.Sprintf(sqlSoftware, q.arg(c.key))
		case "not_installed":
			return not(fmt.Sprintf(sqlSoftware, q.arg(c.key)))
		}
		return fmt.Sprintf(sqlSoftwareVersion, q.arg(c.key), comparisons[c.op], q.arg(versionKey(c.str)))
	case "software_name":
		return fmt.Sprintf(sqlSoftwareName, q.arg(c.str))
	case "logged_in_user":
		q.metrics = true
		positive, negate := c.op, false
		if p, ok := negatedStringOps[c.op]; ok {
			positive, negate = p, true
		}
		s := fmt.Sprintf(sqlLoggedInUsers, q.stringPredicate(sqlUser, positive, c.str))
		if negate {
			return not(s)
		}
		return s
	}
	// Single-valued strings, with version comparisons for two of them.
	if op, ok := comparisons[c.op]; ok {
		key := sqlAgentVersionKey
		if c.field.name == "os_version" {
			key, q.inventory = sqlOSVersionKey, true
		}
		return fmt.Sprintf(sqlVersionCmp, key, op, q.arg(versionKey(c.str)))
	}
	subject, lowered := q.stringSubject(c)
	positive, negate := c.op, false
	if p, ok := negatedStringOps[c.op]; ok {
		positive, negate = p, true
	}
	var s string
	if lowered {
		s = q.predicate(loweredPredicates, subject, positive, c.str)
	} else {
		s = q.stringPredicate(subject, positive, c.str)
	}
	if negate {
		return not(s)
	}
	return s
}

func (q *query) stringPredicate(subject, op, value string) string {
	return q.predicate(stringPredicates, subject, op, value)
}

func (q *query) predicate(preds map[string]string, subject, op, value string) string {
	if op == "is_not_empty" {
		return fmt.Sprintf(preds[op], subject)
	}
	return fmt.Sprintf(preds[op], subject, q.arg(value))
}

// deviceStrings are the string fields of devices: the column, and its
// lower-cased copy in device_filter_rows.
var deviceStrings = map[string][2]string{
	"hostname":      {sqlHostname, sqlHostnameLower},
	"description":   {sqlDescription, sqlDescriptionLower},
	"os":            {sqlOS, sqlOSLower},
	"agent_version": {sqlAgentVersion, sqlAgentVersionLower},
}

// stringSubject is the expression a string condition reads, and whether
// it is stored lower-cased.
func (q *query) stringSubject(c *cond) (string, bool) {
	if cols, ok := deviceStrings[c.field.name]; ok {
		if q.rows {
			return cols[1], true
		}
		return cols[0], false
	}
	switch c.field.name {
	case "os_version":
		q.inventory = true
		return sqlOSVersion, false
	case "cpu_model":
		q.inventory = true
		return sqlCPUModel, false
	}
	return fmt.Sprintf(sqlMetadata, q.arg(c.num)), false
}

func (q *query) number(name string) string {
	switch name {
	case "pending_patches":
		return sqlPending
	case "cpu_cores":
		q.inventory = true
		return sqlCPUCores
	case "memory_total_bytes":
		q.inventory = true
		return sqlMemoryTotal
	case "disk_total_bytes":
		q.inventory = true
		return fmt.Sprintf(sqlDiskSum, "size_bytes")
	}
	q.inventory = true
	return fmt.Sprintf(sqlDiskSum, "free_bytes")
}

// ceilMicro rounds t up to PostgreSQL's microsecond precision, so that
// "stored >= cutoff" in SQL decides exactly as Go's comparison with the
// nanosecond cutoff does (stored times are whole microseconds).
func ceilMicro(t time.Time) time.Time {
	if t.Nanosecond()%1000 == 0 {
		return t
	}
	return t.Truncate(time.Microsecond).Add(time.Microsecond)
}

// selection is a compiled WHERE clause (scope, drilldowns, trees).
type selection struct {
	q     *query
	where []string
}

func (s *selection) sql() string {
	return sqlWhere + strings.Join(s.where, sqlAnd)
}

func (s *selection) from(head string) string {
	if s.q.inventory {
		return head + sqlJoinInventory
	}
	return head
}

// countSQL is the total matching, over the table the selection was
// compiled for.
func (s *selection) countSQL() string {
	if s.q.rows {
		return s.from(sqlFromCountRows) + s.sql()
	}
	return s.from(sqlFromCount) + s.sql()
}

// pageSQL is the page of rows, from a selection compiled for devices.
func (s *selection) pageSQL(sort Sort, limit, offset int) string {
	q := s.q
	dir := directions[sort.Desc]
	var extra string
	switch sort.Column {
	case "status":
		extra = fmt.Sprintf(sqlStatusRank, q.onlineExpr(), q.socketExpr())
	case "metadata":
		extra = fmt.Sprintf(sqlMetadata, q.arg(sort.Metadata))
	}
	order := fmt.Sprintf(sortKeys[sort.Column], dir[0], dir[1], extra)
	return s.from("SELECT "+sqlRowColumns+sqlFromDevices) + s.sql() + sqlOrderBy + order +
		fmt.Sprintf(sqlLimitOffset, q.arg(limit), q.arg(offset))
}

func (s *selection) refsSQL() string {
	return s.from(sqlSelectRefs) + s.sql() + sqlOrderByGUID
}
