package devicefilters

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn/internal/pgtest"
)

// Filter values are compared as the key versionKey computes in Go, stored
// versions as the key cairn_version_key computes in PostgreSQL: the two
// agree on every valid filter value, and the SQL rule reads real-world
// version strings as documented.
func TestVersionKeyMatchesSQL(t *testing.T) {
	t.Parallel()
	store := pgtest.NewDB(t)
	ctx := context.Background()
	r := rand.New(rand.NewPCG(1, 2))
	values := []string{"0", "0.0", "00.10", "1.0.0", "1.2", "v1.2.0", "V10.0.19045.3570", "007.8", "123456789012345678901234567890.1"}
	for range 300 {
		parts := make([]string, 1+r.IntN(6))
		for i := range parts {
			parts[i] = strings.Repeat("0", r.IntN(2)) + fmt.Sprint([]int{0, 1, 9, 10, 100, r.IntN(1e6)}[r.IntN(6)])
		}
		values = append(values, []string{"", "v"}[r.IntN(2)]+strings.Join(parts, "."))
	}
	// Suffixed versions as the software audit shows them are filter values
	// too; their key is the dotted number's, as for stored versions.
	values = append(values, "5.2.15-2+b8", "3.0.2-0ubuntu1.10", "1:9.18.19-1~deb12u1", "v5.1 beta", "120.0.6099.130", "2.4.0+dfsg", "7_beta")
	for _, v := range values {
		require.True(t, versionPattern.MatchString(v) || len(v) > 20, v)
		var sql string
		require.NoError(t, store.Pool.QueryRow(ctx, `SELECT cairn_version_key($1)::text`, v).Scan(&sql))
		require.Equal(t, sql, versionKey(v), v)
	}
	for stored, want := range map[string]*string{
		"3.0.2-0ubuntu1.10": ptr("{3,0,2}"), "1:9.18.19-1~deb12u1": ptr("{9,18,19}"), "120.0.6099.130": ptr("{120,0,6099,130}"),
		"2.4.0": ptr("{2,4}"), " v5.1 beta": ptr("{5,1}"), "10.0": ptr("{10}"), "unknown": nil, "": nil, "beta-2": nil,
	} {
		var got *string
		require.NoError(t, store.Pool.QueryRow(ctx, `SELECT cairn_version_key($1)::text`, stored).Scan(&got))
		require.Equal(t, want, got, stored)
	}
}

func ptr(s string) *string { return &s }
