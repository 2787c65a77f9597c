package cairn_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn"
)

func TestCodeBookGathersDeclarations(t *testing.T) {
	t.Parallel()
	book, err := cairn.NewCodeBook(cairn.CoreCodes, []cairn.Code{
		{ID: "widget_jammed", Status: http.StatusConflict, Agent: true},
		{ID: "widget_busy", Status: http.StatusServiceUnavailable, Retryable: true},
		// An agent's not_found passed on: the same status as the core's.
		{ID: cairn.ECodeNotFound, Status: http.StatusNotFound, Agent: true},
	})
	require.NoError(t, err)
	for _, tc := range []struct {
		code             string
		status           int
		retryable, agent bool
	}{
		{"widget_jammed", http.StatusConflict, false, true},
		{"widget_busy", http.StatusServiceUnavailable, true, false},
		{cairn.ECodeNotFound, http.StatusNotFound, false, true},
		{cairn.ECodeUnauthorized, http.StatusUnauthorized, false, false},
		{cairn.ECodeUnavailable, http.StatusServiceUnavailable, true, false},
		{"never_declared", http.StatusBadRequest, false, false},
	} {
		require.Equal(t, tc.status, book.Status(tc.code), tc.code)
		require.Equal(t, tc.retryable, book.Transient(cairn.Errorf(tc.code, "x")), tc.code)
		require.Equal(t, tc.agent, book.FromAgent(tc.code), tc.code)
	}
	require.False(t, book.Transient(nil))
}

func TestCodeBookRefusesDisagreement(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		decl []cairn.Code
	}{
		{"another status", []cairn.Code{{ID: cairn.ECodeNotFound, Status: http.StatusGone}}},
		{"another retryability", []cairn.Code{{ID: cairn.ECodeNotFound, Status: http.StatusNotFound, Retryable: true}}},
		{"no status", []cairn.Code{{ID: "widget_jammed"}}},
		{"a success status", []cairn.Code{{ID: "widget_jammed", Status: http.StatusOK}}},
		{"no ID", []cairn.Code{{Status: http.StatusConflict}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := cairn.NewCodeBook(cairn.CoreCodes, tc.decl)
			require.Error(t, err)
		})
	}
}
