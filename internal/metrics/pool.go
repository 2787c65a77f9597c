package metrics

import (
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
)

// poolCollector reads pgxpool.Stat at scrape time: the pool keeps the
// counts itself, so there is nothing to update on the query path.
type poolCollector struct {
	stat                                                func() *pgxpool.Stat
	total, idle, acquired, constructing, max            *prometheus.Desc
	acquires, emptyAcquires, canceledAcquires, waitSecs *prometheus.Desc
	newConns, lifetimeDestroyed, idleDestroyed          *prometheus.Desc
}

func newPoolCollector(stat func() *pgxpool.Stat) poolCollector {
	d := func(name, help string) *prometheus.Desc {
		return prometheus.NewDesc("cairn_db_pool_"+name, help, nil, nil)
	}
	return poolCollector{stat: stat,
		total:             d("connections", "Connections open in the PostgreSQL pool."),
		idle:              d("idle_connections", "Idle connections in the pool."),
		acquired:          d("acquired_connections", "Connections in use."),
		constructing:      d("constructing_connections", "Connections being opened."),
		max:               d("max_connections", "The pool's size (CAIRN_DB_MAX_CONNS)."),
		acquires:          d("acquires_total", "Connections acquired from the pool."),
		emptyAcquires:     d("empty_acquires_total", "Acquires that had to wait because no idle connection was free."),
		canceledAcquires:  d("canceled_acquires_total", "Acquires given up (the acquire timeout or the request ended)."),
		waitSecs:          d("acquire_wait_seconds_total", "Time spent waiting for a connection."),
		newConns:          d("new_connections_total", "Connections opened."),
		lifetimeDestroyed: d("max_lifetime_destroyed_total", "Connections closed for reaching their maximum lifetime."),
		idleDestroyed:     d("max_idle_destroyed_total", "Connections closed for being idle too long."),
	}
}

func (c poolCollector) descs() []*prometheus.Desc {
	return []*prometheus.Desc{c.total, c.idle, c.acquired, c.constructing, c.max, c.acquires, c.emptyAcquires,
		c.canceledAcquires, c.waitSecs, c.newConns, c.lifetimeDestroyed, c.idleDestroyed}
}

func (c poolCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.descs() {
		ch <- d
	}
}

func (c poolCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.stat()
	if s == nil {
		return
	}
	gauge := func(d *prometheus.Desc, v float64) { ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v) }
	counter := func(d *prometheus.Desc, v float64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v)
	}
	gauge(c.total, float64(s.TotalConns()))
	gauge(c.idle, float64(s.IdleConns()))
	gauge(c.acquired, float64(s.AcquiredConns()))
	gauge(c.constructing, float64(s.ConstructingConns()))
	gauge(c.max, float64(s.MaxConns()))
	counter(c.acquires, float64(s.AcquireCount()))
	counter(c.emptyAcquires, float64(s.EmptyAcquireCount()))
	counter(c.canceledAcquires, float64(s.CanceledAcquireCount()))
	counter(c.waitSecs, s.AcquireDuration().Seconds())
	counter(c.newConns, float64(s.NewConnsCount()))
	counter(c.lifetimeDestroyed, float64(s.MaxLifetimeDestroyCount()))
	counter(c.idleDestroyed, float64(s.MaxIdleDestroyCount()))
}
