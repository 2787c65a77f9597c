package jsonbody

import (
	"bytes"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/agent/proto"
)

func decode(body, contentType string, dst any, limit int64, allowEmpty bool) error {
	r := httptest.NewRequest("POST", "/api/x", strings.NewReader(body))
	if contentType != "" {
		r.Header.Set("Content-Type", contentType)
	}
	return Decode(httptest.NewRecorder(), r, dst, limit, allowEmpty)
}

type sample struct {
	Name  string          `json:"name"`
	Count int             `json:"count"`
	Tags  []string        `json:"tags"`
	Extra json.RawMessage `json:"extra"`
}

func TestDecode(t *testing.T) {
	t.Parallel()
	var s sample
	require.NoError(t, decode(`{"name":"a\\u0000b","count":2,"extra":{"k":"\\\\"}}`, "application/json; charset=utf-8", &s, 1<<10, false))
	require.Equal(t, `a\u0000b`, s.Name, "an escaped backslash before u0000 is text, not NUL")
	for _, tc := range []struct{ body, ct, code, field string }{
		{`{"name":"a\u0000b"}`, "", cairn.ECodeValidation, "body"},
		{`{"extra":{"k":"\u0000"}}`, "", cairn.ECodeValidation, "body"},
		{`{"tags":["\\\u0000"]}`, "", cairn.ECodeValidation, "body"},
		{"{\"name\":\"a\x00b\"}", "", cairn.ECodeValidation, "body"},
		{`{"count":"x"}`, "", cairn.ECodeValidation, "count"},
		{`{"zz":1}`, "", cairn.ECodeValidation, "zz"},
		{`{} {}`, "", cairn.ECodeValidation, "body"},
		{``, "", cairn.ECodeValidation, "body"},
		{`{}`, "text/plain", cairn.ECodeUnsupportedMedia, ""},
		{`{"name":"` + strings.Repeat("x", 2000) + `"}`, "", cairn.ECodeTooLarge, ""},
	} {
		err := decode(tc.body, tc.ct, &sample{}, 1<<10, false)
		require.Equal(t, tc.code, cairn.ErrorCode(err), "%.40q: %v", tc.body, err)
		if tc.field != "" {
			require.Contains(t, err.(*cairn.Error).Fields, tc.field, "%.40q", tc.body)
		}
	}
	require.NoError(t, decode(``, "", &sample{}, 1<<10, true))
}

// clientCodes are the only answers Decode may give: all 4xx.
var clientCodes = map[string]bool{cairn.ECodeValidation: true, cairn.ECodeUnsupportedMedia: true, cairn.ECodeTooLarge: true}

// fuzzTargets are destination shapes, by the selector byte: a local
// sample and the agent's largest bodies.
var fuzzTargets = []func() any{
	func() any { return &sample{} },
	func() any { return &map[string]any{} },
	func() any { return &proto.Details{} },
	func() any { return &proto.EnrollRequest{} },
	func() any { return &proto.ScriptResultPost{} },
	func() any { return &proto.Heartbeat{} },
	func() any { return &struct{ At time.Time }{} },
}

// FuzzDecode feeds arbitrary bodies and content types to the decoder: the
// answer is success or one of the client codes, never a panic (a 500),
// and nothing accepted carries a NUL.
func FuzzDecode(f *testing.F) {
	for i, body := range []string{
		`{}`, ``, `null`, `[]`, `"text"`, `{"zz_unknown":1}`, `{"broken":`, `{} {}`, `{}x`,
		`{"name":"n","count":3,"tags":["a"],"extra":{"deep":[1,{"x":null}]}}`,
		`{"name":1e999}`, `{"name":"\ud800"}`, `{"count":9223372036854775808}`, `{"name":"\\u0000"}`, `{"name":"\u0000"}`,
		`{"hostname":"host-1","fingerprint":"fp","public_key":"AAAA","nonce":"n.m","code":"abcd-efgh","signature":"c2ln"}`,
		`{"inventory":{"software":[{"name":"bash","version":"5"}]},"collected_at":"2026-01-01T00:00:00Z"}`,
		`{"At":"not a time"}`, `{"a":{"b":{"c":[[[[[[[[[[]]]]]]]]]]}}}`,
	} {
		f.Add(uint8(i), "application/json", []byte(body))
	}
	f.Add(uint8(0), "text/plain", []byte(`{}`))
	f.Add(uint8(1), "application/json; charset=\"", []byte(`{}`))
	f.Add(uint8(2), "", bytes.Repeat([]byte(`[`), 20000))
	f.Fuzz(func(t *testing.T, which uint8, contentType string, body []byte) {
		dst := fuzzTargets[int(which)%len(fuzzTargets)]()
		err := decode(string(body), contentType, dst, 1<<14, which%2 == 0)
		if err != nil {
			if !clientCodes[cairn.ErrorCode(err)] {
				t.Fatalf("%T: %v is not a client error", dst, err)
			}
			return
		}
		if out, _ := json.Marshal(dst); hasNUL(out) {
			t.Fatalf("%T: accepted a NUL: %s", dst, out)
		}
	})
}
