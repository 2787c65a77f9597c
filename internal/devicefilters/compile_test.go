package devicefilters

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn"
)

// randomValue is a valid value for op of f; hostile strings included.
func randomValue(r *rand.Rand, f *field, op string) any {
	switch opType(f, op) {
	case TypeString:
		pieces := []string{"'", "\"", "--", "$1", "%", "_", "\\", ";DROP TABLE devices;", "ü", "日本", " ", "x", "OR 1=1", "d.guid", ")"}
		var b strings.Builder
		for range 1 + r.IntN(6) {
			b.WriteString(pieces[r.IntN(len(pieces))])
		}
		return fmt.Sprintf("v%d%s", r.Uint32(), b.String())
	case TypeVersion:
		return fmt.Sprintf("%d.%d.%d", r.IntN(1000), r.IntN(1000), r.IntN(100000))
	case TypeNumber:
		return json.Number(fmt.Sprintf("%d.%d", r.IntN(1e9), r.IntN(100)))
	case TypeDuration:
		return 1 + r.IntN(1e8)
	case TypeTime:
		return time.Unix(r.Int64N(4e9), r.Int64N(1e9)).UTC().Format(time.RFC3339Nano)
	case TypeCIDR:
		return fmt.Sprintf("%d.%d.%d.0/%d", r.IntN(256), r.IntN(256), r.IntN(256), 8+r.IntN(17))
	case TypeSiteIDs:
		return []int64{1 + r.Int64N(1e9), 1 + r.Int64N(1e9)}
	case TypeEnum:
		return f.enum[r.IntN(len(f.enum))]
	}
	return nil
}

// shape is a random tree's structure; fill gives it values.
type shape struct {
	group    string
	children []shape
	field    *field
	op       string
	// status is part of the shape: its three values pick fragments
	// (fixed SQL), not parameters.
	status string
}

func randomShape(r *rand.Rand, depth int) shape {
	s := shape{group: []string{MatchAll, MatchAny}[r.IntN(2)]}
	for range 1 + r.IntN(4) {
		if depth < MaxDepth && r.IntN(4) == 0 {
			s.children = append(s.children, randomShape(r, depth+1))
			continue
		}
		f := &fields[r.IntN(len(fields))]
		c := shape{field: f, op: f.ops[r.IntN(len(f.ops))]}
		if f.name == "status" {
			c.status = f.enum[r.IntN(len(f.enum))]
		}
		s.children = append(s.children, c)
	}
	return s
}

// fill builds the tree of s with random values and keys, collecting
// every value and key it used.
func (s shape) fill(r *rand.Rand, used *[]string) map[string]any {
	if s.field == nil {
		list := []any{}
		for _, c := range s.children {
			list = append(list, c.fill(r, used))
		}
		return map[string]any{"match": s.group, "conditions": list}
	}
	c := map[string]any{"field": s.field.name, "op": s.op}
	switch s.field.keyType {
	case KeyMetadataField:
		c["key"] = 1 + r.IntN(MetadataFields)
	case KeySoftwareName:
		k := fmt.Sprintf("sw%d'--", r.Uint32())
		c["key"] = k
		*used = append(*used, strings.ToLower(k))
	}
	if s.status != "" {
		c["value"] = s.status
	} else if v := randomValue(r, s.field, s.op); v != nil {
		c["value"] = v
		if str, ok := v.(string); ok && len(str) > 6 {
			*used = append(*used, str)
		}
	}
	return c
}

func compileSQL(t *testing.T, doc map[string]any) (string, []any) {
	t.Helper()
	raw, err := json.Marshal(doc)
	require.NoError(t, err)
	n, err := Parse(raw, "filter")
	require.NoError(t, err, string(raw))
	s := New(nil, Config{Now: func() time.Time { return time.Unix(1.9e9, 123456789) }})
	sel, err := s.selection(cairn.SiteScope{SiteIDs: []int64{7}}, s.cfg.Now(), []Node{n}, 3, "Offline", false)
	require.NoError(t, err)
	rows := sel.pageSQL(Sort{Column: "metadata", Metadata: 9, Desc: true}, 50, 10)
	cnt, err := s.selection(cairn.SiteScope{SiteIDs: []int64{7}}, s.cfg.Now(), []Node{n}, 3, "Offline", true)
	require.NoError(t, err)
	return rows + "\n" + sel.countSQL() + "\n" + cnt.countSQL() + "\n" + sel.refsSQL(), append(sel.q.args, cnt.q.args...)
}

// The compiled SQL depends on the tree's shape alone: the same fields and
// ops with other values, keys and times give the same text, and no value
// ever appears in it (each is a bound parameter).
func TestCompiledSQLDependsOnShapeOnly(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(9, 9))
	for range 500 {
		sh := randomShape(r, 1)
		var usedA, usedB []string
		sqlA, argsA := compileSQL(t, sh.fill(r, &usedA))
		sqlB, _ := compileSQL(t, sh.fill(r, &usedB))
		require.Equal(t, sqlA, sqlB)
		for _, v := range append(usedA, usedB...) {
			require.NotContains(t, sqlA, v)
		}
		require.NotEmpty(t, argsA)
	}
}

// FuzzStringValuesStayParameters: whatever a string value or software
// key holds, the SQL text is that of a plain value.
func FuzzStringValuesStayParameters(f *testing.F) {
	for _, s := range []string{"x", "'", "'; DROP TABLE devices; --", "$1", "%_\\", "\x00", "日本"} {
		f.Add(s)
	}
	doc := func(s string) map[string]any {
		return map[string]any{"match": "any", "conditions": []any{
			map[string]any{"field": "hostname", "op": "contains", "value": s},
			map[string]any{"field": "software", "key": "k" + s, "op": "installed"},
			map[string]any{"field": "logged_in_user", "op": "not_equals", "value": s},
			map[string]any{"field": "metadata", "key": 5, "op": "ends_with", "value": s},
		}}
	}
	plain, _ := compileSQL(&testing.T{}, doc("plain"))
	f.Fuzz(func(t *testing.T, s string) {
		raw, _ := json.Marshal(doc(s))
		if _, err := Parse(raw, "filter"); err != nil {
			return // not a valid value (too long, NUL, bad UTF-8)
		}
		got, _ := compileSQL(t, doc(s))
		require.Equal(t, plain, got)
	})
}
