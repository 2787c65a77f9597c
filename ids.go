package cairn

// Distinct types for identifiers that travel together, so an argument
// swap does not compile: a transfer ID where a device GUID is wanted is a
// type error, not a wrong row. sqlc gives their columns these types
// (sqlc.yaml overrides), so they run from PostgreSQL to the wire. On the
// wire and in workflow histories they are the same strings as before.

// TransferID names a file transfer (file_transfers.id).
type TransferID string
