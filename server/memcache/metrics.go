package memcache

import "github.com/prometheus/client_golang/prometheus"

// Collector exposes the door's own counters to Prometheus, beside the
// partitions' (which count the commands the door runs, as they count
// the RFP clients').
func (d *Door) Collector() prometheus.Collector { return collector{d} }

type collector struct{ d *Door }

type doorMetric struct {
	desc *prometheus.Desc
	kind prometheus.ValueType
	get  func(*Door) float64
}

var doorMetrics = []doorMetric{
	{prometheus.NewDesc("jakiro_memcached_connections", "Connections open to the memcached door.", nil, nil), prometheus.GaugeValue,
		func(d *Door) float64 { return float64(d.curConns.Load()) }},
	{prometheus.NewDesc("jakiro_memcached_connections_total", "Connections the memcached door accepted.", nil, nil), prometheus.CounterValue,
		func(d *Door) float64 { return float64(d.totalConns.Load()) }},
	{prometheus.NewDesc("jakiro_memcached_gets_total", "Keys the memcached door looked up (get, gets, gat, gats; one per key).", nil, nil), prometheus.CounterValue,
		func(d *Door) float64 { return float64(d.cmdGet.Load()) }},
	{prometheus.NewDesc("jakiro_memcached_get_hits_total", "Keys found by the memcached door's lookups.", nil, nil), prometheus.CounterValue,
		func(d *Door) float64 { return float64(d.getHits.Load()) }},
	{prometheus.NewDesc("jakiro_memcached_sets_total", "Storage commands through the memcached door (set, add, replace, append, prepend, cas).", nil, nil), prometheus.CounterValue,
		func(d *Door) float64 { return float64(d.cmdSet.Load()) }},
	{prometheus.NewDesc("jakiro_memcached_touches_total", "touch, gat and gats commands through the memcached door.", nil, nil), prometheus.CounterValue,
		func(d *Door) float64 { return float64(d.cmdTouch.Load()) }},
	{prometheus.NewDesc("jakiro_memcached_flushes_total", "flush_all commands through the memcached door.", nil, nil), prometheus.CounterValue,
		func(d *Door) float64 { return float64(d.cmdFlush.Load()) }},
	{prometheus.NewDesc("jakiro_memcached_bad_input_closes_total", "Connections the door closed for input it could not parse or skip.", nil, nil), prometheus.CounterValue,
		func(d *Door) float64 { return float64(d.badInput.Load()) }},
	{prometheus.NewDesc("jakiro_memcached_slow_client_closes_total", "Connections the door closed because the client did not take its answers within the write timeout.", nil, nil), prometheus.CounterValue,
		func(d *Door) float64 { return float64(d.slowClients.Load()) }},
	{prometheus.NewDesc("jakiro_memcached_run_timeouts_total", "Rounds whose partitions did not answer within the run timeout.", nil, nil), prometheus.CounterValue,
		func(d *Door) float64 { return float64(d.timeout.Load()) }},
}

func (c collector) Describe(ch chan<- *prometheus.Desc) {
	for _, m := range doorMetrics {
		ch <- m.desc
	}
}

func (c collector) Collect(ch chan<- prometheus.Metric) {
	for _, m := range doorMetrics {
		ch <- prometheus.MustNewConstMetric(m.desc, m.kind, m.get(c.d))
	}
}
