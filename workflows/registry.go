package workflows

// Registered lists every workflow function; each worker of every process
// registers all of them (which work lands where is decided by the task
// queue the starter names). A new workflow adds one line here.
var Registered = []any{
	WorkerProbe,
	Maintenance,
	DeviceTrustAction,
	EnrollmentApproval,
	DeviceOperation,
	AgentUpdate,
	ScheduledJobFire,
	FlowRun,
	JobRun,
	FileTransfer,
}
