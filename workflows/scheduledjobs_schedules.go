package workflows

import "time"

// ScheduledJobSchedulePrefix prefixes the Temporal Schedule of every
// scheduled job: `scheduled-job:<id>`. Its fires' workflow IDs are the
// schedule ID plus Temporal's timestamp suffix.
const ScheduledJobSchedulePrefix = "scheduled-job:"

// Scheduled job timing. The catch-up window lets a fire missed while the
// Engine or Temporal was down run when they return, if that is within 15
// minutes; older misses are dropped rather than replayed in a burst.
const (
	JobCatchupWindow = 15 * time.Minute
	// JobFireTimeout bounds one fire (its run included), so a stuck run
	// cannot keep its schedule skipping for ever.
	JobFireTimeout = 25 * time.Hour
)
