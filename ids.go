package cairn

// Distinct types for identifiers that travel together, so an argument
// swap does not compile: a transfer ID where a device GUID is wanted is a
// type error, not a wrong row. sqlc gives their columns these types
// (sqlc.yaml overrides), so they run from PostgreSQL to the wire. On the
// wire and in workflow histories they are the same strings as before.

// TransferID names a file transfer (file_transfers.id).
type TransferID string

// DeviceGUID names an enrolled device (devices.guid), the agent's identity.
type DeviceGUID string

// SiteID names a site (sites.id).
type SiteID int64

// OperationID names one command-path operation sent to an agent
// (device_activity.operation_id, agent_requests.operation_id, an agent
// update operation's ID).
type OperationID string

// RunID names a job run: a quick run or a scheduled job's fire (job_runs.id).
type RunID string
