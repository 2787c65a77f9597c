package api

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestPreferWait(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		prefer []string
		wait   time.Duration
		ok     bool
	}{
		{"none", nil, 0, false},
		{"seconds", []string{"wait=10"}, 10 * time.Second, true},
		{"zero", []string{"wait=0"}, 0, true},
		{"among others", []string{"respond-async, wait=5"}, 5 * time.Second, true},
		{"second header", []string{"return=minimal", "Wait=7"}, 7 * time.Second, true},
		{"quoted with parameter", []string{`wait="3"; foo=bar`}, 3 * time.Second, true},
		{"spaces", []string{" wait = 4 "}, 4 * time.Second, true},
		{"capped", []string{"wait=3600"}, MaxOperationWait, true},
		{"negative is ignored", []string{"wait=-1"}, 0, false},
		{"not a number is ignored", []string{"wait=soon"}, 0, false},
		{"no value is ignored", []string{"wait"}, 0, false},
		{"other preference", []string{"handling=strict"}, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := http.Header{}
			for _, p := range tc.prefer {
				h.Add("Prefer", p)
			}
			wait, ok := preferWait(h)
			require.Equal(t, tc.ok, ok)
			require.Equal(t, tc.wait, wait)
		})
	}
}
