package scheduledjobs

import (
	"fmt"
	"strings"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/cairn-rmm/cairn"
)

// Schedule types.
const (
	ScheduleOnce     = "once"
	ScheduleCron     = "cron"
	ScheduleInterval = "interval"
	ScheduleManual   = "manual"
)

// Interval bounds: a minute is the finest a schedule fires (like cron),
// a year the coarsest that still means "repeating".
const (
	MinIntervalSeconds = 60
	MaxIntervalSeconds = 366 * 24 * 3600
)

// Schedule says when a job fires. Exactly the fields of its type are set.
type Schedule struct {
	Type string `json:"type"`
	// At is the fire time of a once schedule.
	At *time.Time `json:"at,omitempty"`
	// Expression is a standard five-field cron expression (or @hourly,
	// @daily, @weekly, @monthly, @yearly), evaluated in Timezone (IANA,
	// default UTC).
	Expression string `json:"expression,omitempty"`
	Timezone   string `json:"timezone,omitempty"`
	// EverySeconds is the period of an interval schedule; fires are
	// aligned to the Unix epoch (as Temporal's interval specs are).
	EverySeconds int64 `json:"every_seconds,omitempty"`
}

// cronParser accepts what Temporal's cron specs accept in five fields.
var cronParser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// Normalize checks s and returns it with defaults applied and foreign
// fields dropped; problems are reported on field (e.g. "schedule") and
// its sub-fields ("schedule.expression"). now is when the check happens:
// a once schedule must lie ahead of it.
func (s Schedule) Normalize(field string, now time.Time, v *cairn.Validation) Schedule {
	out := Schedule{Type: s.Type}
	switch s.Type {
	case ScheduleOnce:
		switch {
		case s.At == nil || s.At.IsZero():
			v.Add(field+".at", "is required (RFC 3339)")
		case !s.At.After(now):
			v.Add(field+".at", "must be in the future")
		default:
			at := s.At.UTC().Truncate(time.Second)
			out.At = &at
		}
	case ScheduleCron:
		out.Expression = strings.Join(strings.Fields(s.Expression), " ")
		out.Timezone = strings.TrimSpace(s.Timezone)
		if out.Timezone == "" {
			out.Timezone = "UTC"
		}
		if _, err := loadZone(out.Timezone); err != nil {
			v.Add(field+".timezone", "must be an IANA time zone such as Europe/Berlin")
		}
		if err := checkCron(out.Expression); err != nil {
			v.Add(field+".expression", err.Error())
		}
	case ScheduleInterval:
		if s.EverySeconds < MinIntervalSeconds || s.EverySeconds > MaxIntervalSeconds {
			v.Add(field+".every_seconds", fmt.Sprintf("must be %d to %d", MinIntervalSeconds, MaxIntervalSeconds))
		}
		out.EverySeconds = s.EverySeconds
	case ScheduleManual:
	case "":
		v.Add(field+".type", "is required: once, cron, interval or manual")
	default:
		v.Add(field+".type", "must be once, cron, interval or manual")
	}
	return out
}

func checkCron(expr string) error {
	switch {
	case expr == "":
		return fmt.Errorf("is required")
	case strings.HasPrefix(expr, "@every"):
		return fmt.Errorf("use an interval schedule instead of @every")
	case strings.HasPrefix(expr, "TZ=") || strings.HasPrefix(expr, "CRON_TZ="):
		return fmt.Errorf("put the time zone in timezone, not in the expression")
	}
	if _, err := cronParser.Parse(expr); err != nil {
		return fmt.Errorf("is not a valid five-field cron expression: %v", err)
	}
	return nil
}

// loadZone loads an IANA zone; "Local" is refused because it means
// whatever the process's host says.
func loadZone(name string) (*time.Location, error) {
	if name == "Local" {
		return nil, fmt.Errorf("local time is not a zone")
	}
	return time.LoadLocation(name)
}

// Fires reports whether s fires by itself (has a Temporal Schedule).
func (s Schedule) Fires() bool { return s.Type != ScheduleManual }

// NextRuns returns up to n fire times strictly after from, in UTC. s must
// be normalized.
func (s Schedule) NextRuns(from time.Time, n int) []time.Time {
	var out []time.Time
	switch s.Type {
	case ScheduleOnce:
		if s.At != nil && s.At.After(from) && n > 0 {
			out = append(out, s.At.UTC())
		}
	case ScheduleCron:
		loc, err := loadZone(s.Timezone)
		if err != nil {
			return nil
		}
		sched, err := cronParser.Parse(s.Expression)
		if err != nil {
			return nil
		}
		t := from.In(loc)
		for range n {
			t = sched.Next(t)
			if t.IsZero() {
				break
			}
			out = append(out, t.UTC())
		}
	case ScheduleInterval:
		if s.EverySeconds <= 0 {
			return nil
		}
		every := s.EverySeconds
		next := (from.Unix()/every + 1) * every
		for i := range int64(n) {
			out = append(out, time.Unix(next+i*every, 0).UTC())
		}
	}
	return out
}
