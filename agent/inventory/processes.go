package inventory

import (
	"math"
	"time"
)

// procKey identifies a process across collections: a PID is reused, a PID
// with its start time is not.
type procKey struct {
	pid     int32
	created int64
}

// procSamples are the CPU seconds of each process at the last collection,
// so the next one reports CPU use over the interval, as top does, rather
// than since the process started.
type procSamples struct {
	at  time.Time
	cpu map[procKey]float64
}

// percent is CPU seconds over a wall-clock interval, rounded to 0.1.
func percent(cpuSeconds float64, wall time.Duration) float64 {
	if cpuSeconds <= 0 || wall <= 0 {
		return 0
	}
	return math.Round(cpuSeconds/wall.Seconds()*1000) / 10
}
