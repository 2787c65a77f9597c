package devicefilters_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/internal/devicefilters"
)

// A bad filter answers validation_failed naming the JSON path of exactly
// the bad node.
func TestBadFiltersNameTheBadNode(t *testing.T) {
	t.Parallel()
	nest := func(depth int) string {
		doc := `{"field":"hostname","op":"is_empty"}`
		for range depth {
			doc = `{"match":"all","conditions":[` + doc + `]}`
		}
		return doc
	}
	many := `{"match":"any","conditions":[` + strings.TrimSuffix(strings.Repeat(
		`{"match":"all","conditions":[`+strings.TrimSuffix(strings.Repeat(`{"field":"hostname","op":"is_empty"},`, 41), ",")+`]},`, 5), ",") + `]}`
	for doc, path := range map[string]string{
		`[]`:                                   "filter",
		`{"field":"hostname","op":"is_empty"}`: "filter",
		`{"match":"all"}`:                      "filter.conditions",
		`{"match":"all","conditions":[]}`:      "filter.conditions",
		`{"match":"some","conditions":[{"field":"hostname","op":"is_empty"}]}`:                                                  "filter.match",
		`{"match":"all","conditions":[{"field":"hostname","op":"is_empty"}],"extra":1}`:                                         "filter.extra",
		`{"match":"all","conditions":[{"field":"colour","op":"equals","value":"x"}]}`:                                           "filter.conditions[0].field",
		`{"match":"all","conditions":[{"field":"hostname","op":"is_empty"},{"field":"hostname","op":"gt","value":1}]}`:          "filter.conditions[1].op",
		`{"match":"all","conditions":[{"field":"hostname","op":"equals","value":5}]}`:                                           "filter.conditions[0].value",
		`{"match":"all","conditions":[{"field":"hostname","op":"equals"}]}`:                                                     "filter.conditions[0].value",
		`{"match":"all","conditions":[{"field":"hostname","op":"is_empty","value":"x"}]}`:                                       "filter.conditions[0].value",
		`{"match":"all","conditions":[{"field":"hostname","op":"equals","value":"x","key":1}]}`:                                 "filter.conditions[0].key",
		`{"match":"all","conditions":[{"field":"hostname","op":"equals","value":"x","colour":1}]}`:                              "filter.conditions[0].colour",
		`{"match":"all","conditions":["hostname"]}`:                                                                             "filter.conditions[0]",
		`{"match":"all","conditions":[{"op":"equals"}]}`:                                                                        "filter.conditions[0]",
		`{"match":"all","conditions":[{"match":"any","conditions":[{"field":"site","op":"in","value":[]}]}]}`:                   "filter.conditions[0].conditions[0].value",
		`{"match":"all","conditions":[{"match":"any","conditions":[{"field":"site","op":"in","value":["1"]}]}]}`:                "filter.conditions[0].conditions[0].value",
		`{"match":"all","conditions":[{"field":"site","op":"in","value":[0]}]}`:                                                 "filter.conditions[0].value",
		`{"match":"all","conditions":[{"field":"status","op":"is","value":"online"}]}`:                                          "filter.conditions[0].value",
		`{"match":"all","conditions":[{"field":"trust_state","op":"is","value":"trusted"}]}`:                                    "filter.conditions[0].value",
		`{"match":"all","conditions":[{"field":"agent_version","op":"version_lt","value":"1.x"}]}`:                              "filter.conditions[0].value",
		`{"match":"all","conditions":[{"field":"agent_version","op":"version_lt","value":""}]}`:                                 "filter.conditions[0].value",
		`{"match":"all","conditions":[{"field":"last_seen","op":"within_last","value":0}]}`:                                     "filter.conditions[0].value",
		`{"match":"all","conditions":[{"field":"last_seen","op":"within_last","value":1.5}]}`:                                   "filter.conditions[0].value",
		`{"match":"all","conditions":[{"field":"last_seen","op":"before","value":"yesterday"}]}`:                                "filter.conditions[0].value",
		`{"match":"all","conditions":[{"field":"last_seen","op":"never","value":3}]}`:                                           "filter.conditions[0].value",
		`{"match":"all","conditions":[{"field":"cpu_cores","op":"gt","value":"4"}]}`:                                            "filter.conditions[0].value",
		`{"match":"all","conditions":[{"field":"cpu_cores","op":"gt","value":-1}]}`:                                             "filter.conditions[0].value",
		`{"match":"all","conditions":[{"field":"memory_total_bytes","op":"gt","value":1e999999}]}`:                              "filter.conditions[0].value",
		`{"match":"all","conditions":[{"field":"ip_address","op":"in_cidr","value":"10.0.0.0/33"}]}`:                            "filter.conditions[0].value",
		`{"match":"all","conditions":[{"field":"ip_address","op":"in_cidr","value":"10.0.0"}]}`:                                 "filter.conditions[0].value",
		`{"match":"all","conditions":[{"field":"software","op":"installed"}]}`:                                                  "filter.conditions[0].key",
		`{"match":"all","conditions":[{"field":"software","key":"  ","op":"installed"}]}`:                                       "filter.conditions[0].key",
		`{"match":"all","conditions":[{"field":"software","key":"x","op":"version_gt","value":"a"}]}`:                           "filter.conditions[0].value",
		`{"match":"all","conditions":[{"field":"software","key":"x","op":"contains","value":"a"}]}`:                             "filter.conditions[0].op",
		`{"match":"all","conditions":[{"field":"metadata","key":0,"op":"equals","value":"a"}]}`:                                 "filter.conditions[0].key",
		`{"match":"all","conditions":[{"field":"metadata","key":501,"op":"equals","value":"a"}]}`:                               "filter.conditions[0].key",
		`{"match":"all","conditions":[{"field":"metadata","key":"5","op":"equals","value":"a"}]}`:                               "filter.conditions[0].key",
		`{"match":"all","conditions":[{"field":"metadata","op":"equals","value":"a"}]}`:                                         "filter.conditions[0].key",
		`{"match":"all","conditions":[{"field":"metadata","key":5,"op":"equals","value":"` + strings.Repeat("x", 1025) + `"}]}`: "filter.conditions[0].value",
		nest(6): "filter" + strings.Repeat(".conditions[0]", 5),
		many:    "filter",
		`{"match":"all","conditions":[` + strings.TrimSuffix(strings.Repeat(`{"field":"hostname","op":"is_empty"},`, 51), ",") + `]}`: "filter.conditions",
	} {
		_, err := devicefilters.Parse([]byte(doc), "filter")
		require.True(t, cairn.IsCode(err, cairn.ECodeValidation), "%s: %v", doc, err)
		var e *cairn.Error
		require.ErrorAs(t, err, &e)
		require.Len(t, e.Fields, 1, doc)
		require.Contains(t, e.Fields, path, doc)
	}
	// The limits themselves are fine.
	_, err := devicefilters.Parse([]byte(nest(5)), "filter")
	require.NoError(t, err)
	_, err = devicefilters.Parse([]byte(`{"match":"any","conditions":[`+strings.TrimSuffix(strings.Repeat(
		`{"match":"all","conditions":[`+strings.TrimSuffix(strings.Repeat(`{"field":"hostname","op":"is_empty"},`, 40), ",")+`]},`, 5), ",")+`]}`), "filter")
	require.NoError(t, err)
}

// Parse returns the canonical tree: status and enum values canonical,
// numbers exact, CIDRs masked, sites sorted, times UTC.
func TestParseCanonicalizes(t *testing.T) {
	t.Parallel()
	n, err := devicefilters.Parse([]byte(`{"match":"all","conditions":[
		{"field":"status","op":"is","value":" connected "},
		{"field":"trust_state","op":"is_not","value":"ACTIVE"},
		{"field":"memory_total_bytes","op":"gt","value":8e9},
		{"field":"disk_free_bytes","op":"gt","value":1.50},
		{"field":"ip_address","op":"in_cidr","value":"10.1.2.3/8"},
		{"field":"ip_address","op":"in_cidr","value":"::ffff:192.168.1.5"},
		{"field":"site","op":"in","value":[3,1,3]},
		{"field":"last_seen","op":"after","value":"2030-01-02T05:04:05+02:00"},
		{"field":"software","key":"  Google Chrome ","op":"version_gte","value":" 120.0 "},
		{"field":"metadata","key":7,"op":"is_empty"}]}`), "filter")
	require.NoError(t, err)
	b, err := json.Marshal(n)
	require.NoError(t, err)
	require.JSONEq(t, `{"match":"all","conditions":[
		{"field":"status","op":"is","value":"Connected"},
		{"field":"trust_state","op":"is_not","value":"active"},
		{"field":"memory_total_bytes","op":"gt","value":8000000000},
		{"field":"disk_free_bytes","op":"gt","value":1.5},
		{"field":"ip_address","op":"in_cidr","value":"10.0.0.0/8"},
		{"field":"ip_address","op":"in_cidr","value":"192.168.1.5"},
		{"field":"site","op":"in","value":[1,3]},
		{"field":"last_seen","op":"after","value":"2030-01-02T03:04:05Z"},
		{"field":"software","key":"Google Chrome","op":"version_gte","value":"120.0"},
		{"field":"metadata","key":7,"op":"is_empty"}]}`, string(b))
	// A stored tree validates again as it is.
	require.NoError(t, n.Validate("filter"))
}
