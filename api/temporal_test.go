package api_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"

	"github.com/cairn-rmm/cairn/workflows"
)

// An SRE filters workflows by device, site and job kind in the Temporal UI:
// the embedded server must come up with those search attributes.
func TestEmbeddedTemporalHasTheSearchAttributes(t *testing.T) {
	t.Parallel()
	res, err := temporalClient.OperatorService().ListSearchAttributes(context.Background(),
		&operatorservice.ListSearchAttributesRequest{Namespace: "default"})
	require.NoError(t, err)
	for _, name := range workflows.SearchAttributes {
		require.Equal(t, enumspb.INDEXED_VALUE_TYPE_KEYWORD, res.GetCustomAttributes()[name], name)
	}
}
