package transfers_test

import (
	"reflect"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/db"
	"github.com/cairn-rmm/cairn/internal/transfers"
)

// Transfer IDs are cairn.TransferID from the column (sqlc.yaml override)
// to the service's methods, so passing a device GUID or an operation ID
// where a transfer is meant does not compile. This keeps them so.
func TestTransferIDsAreTyped(t *testing.T) {
	t.Parallel()
	id := reflect.TypeFor[cairn.TransferID]()
	for _, f := range []struct {
		row   reflect.Type
		field string
	}{
		{reflect.TypeFor[db.FileTransfer](), "ID"},
		{reflect.TypeFor[db.FileTransferItem](), "TransferID"},
	} {
		sf, ok := f.row.FieldByName(f.field)
		require.True(t, ok, "%s.%s", f.row, f.field)
		require.Equal(t, id, sf.Type, "%s.%s", f.row, f.field)
	}
	svc := reflect.TypeFor[*transfers.Service]()
	for _, name := range []string{"Get", "Start", "Purge", "Finish", "Cancel", "NewDownload", "NewUpload", "WriteItem", "ForDevice",
		"ReportProgress", "ReceiveContent", "InScope"} {
		m, ok := svc.MethodByName(name)
		require.True(t, ok, name)
		found := false
		for i := range m.Type.NumIn() {
			found = found || m.Type.In(i) == id
		}
		require.True(t, found, "%s takes the transfer as a cairn.TransferID", name)
	}
}
