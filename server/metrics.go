package server

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

// Stats returns every partition's latest published snapshot (at most
// publishEvery old): partitions are EREW, so nobody else reads them live.
func (s *Server) Stats() []PartitionStats {
	out := make([]PartitionStats, 0, len(s.parts))
	for _, p := range s.parts {
		p.pubMu.Lock()
		if p.published {
			out = append(out, p.pub)
		}
		p.pubMu.Unlock()
	}
	return out
}

// Collector exposes the server's statistics to Prometheus.
func (s *Server) Collector() prometheus.Collector { return collector{s} }

type collector struct{ s *Server }

type metric struct {
	desc *prometheus.Desc
	kind prometheus.ValueType
	get  func(*PartitionStats) uint64
}

func newDesc(name, help string) *prometheus.Desc {
	return prometheus.NewDesc("jakiro_"+name, help, []string{"partition"}, nil)
}

var (
	clientsDesc   = prometheus.NewDesc("jakiro_clients", "Connected clients.", nil, nil)
	poolSizeDesc  = prometheus.NewDesc("jakiro_join_pool_size", "Connections the listener prepares before anyone dials (--join-pool).", nil, nil)
	poolDesc      = prometheus.NewDesc("jakiro_join_pool_ready", "Prepared connections waiting for a client now.", nil, nil)
	poolTakenDesc = prometheus.NewDesc("jakiro_join_pool_taken_total", "Joins that took a prepared connection.", nil, nil)
	poolMissDesc  = prometheus.NewDesc("jakiro_join_pool_missed_total", "Joins that found the pool empty and waited for their connection to be made.", nil, nil)
	metrics       = []metric{
		{newDesc("items", "Items stored."), prometheus.GaugeValue, func(p *PartitionStats) uint64 { return p.KV.Items }},
		{newDesc("bytes", "Bytes of items stored."), prometheus.GaugeValue, func(p *PartitionStats) uint64 { return p.KV.Bytes }},
		{newDesc("capacity_bytes", "Log capacity."), prometheus.GaugeValue, func(p *PartitionStats) uint64 { return p.KV.Capacity }},
		{newDesc("gets_total", "GET operations."), prometheus.CounterValue, func(p *PartitionStats) uint64 { return p.KV.Gets }},
		{newDesc("hits_total", "GET hits."), prometheus.CounterValue, func(p *PartitionStats) uint64 { return p.KV.Hits }},
		{newDesc("puts_total", "PUT operations."), prometheus.CounterValue, func(p *PartitionStats) uint64 { return p.KV.Puts }},
		{newDesc("deletes_total", "DELETE operations."), prometheus.CounterValue, func(p *PartitionStats) uint64 { return p.KV.Deletes }},
		{newDesc("evictions_total", "Items evicted."), prometheus.CounterValue, func(p *PartitionStats) uint64 { return p.KV.Evictions }},
		{newDesc("expired_total", "Items found expired."), prometheus.CounterValue, func(p *PartitionStats) uint64 { return p.KV.Expired }},
		{newDesc("requests_total", "Requests served."), prometheus.CounterValue, func(p *PartitionStats) uint64 { return p.Served }},
		{newDesc("idle_waits_total", "Times the partition went idle."), prometheus.CounterValue, func(p *PartitionStats) uint64 { return p.Dozes }},
		{newDesc("crowd_dozes_total", "Short waits on the doorbell an idle partition took instead of yielding its core, while yields lost the core to other threads (a host with no free core)."), prometheus.CounterValue, func(p *PartitionStats) uint64 { return p.CrowdDozes }},
		{newDesc("polled_clients", "Clients with a request in the last rfp.ActiveHold (the partition's polled set)."), prometheus.GaugeValue, func(p *PartitionStats) uint64 { return uint64(p.Polled) }},
		{newDesc("sweeps_total", "Passes that looked at every client (after a doorbell ring, before blocking, housekeeping)."), prometheus.CounterValue, func(p *PartitionStats) uint64 { return p.Sweeps }},
		{newDesc("bells_total", "Times the partition found its doorbell rung."), prometheus.CounterValue, func(p *PartitionStats) uint64 { return p.Bells }},
		{newDesc("rings_total", "Rings of the partition's doorbell (shm counts them; other fabrics report 0)."), prometheus.CounterValue, func(p *PartitionStats) uint64 { return p.Rings }},
		{newDesc("reply_errors_total", "Reply-mode WRITEs that failed."), prometheus.CounterValue, func(p *PartitionStats) uint64 { return p.ReplyErrs }},
	}
)

func (c collector) Describe(ch chan<- *prometheus.Desc) {
	ch <- clientsDesc
	ch <- poolSizeDesc
	ch <- poolDesc
	ch <- poolTakenDesc
	ch <- poolMissDesc
	for _, m := range metrics {
		ch <- m.desc
	}
}

func (c collector) Collect(ch chan<- prometheus.Metric) {
	ch <- prometheus.MustNewConstMetric(clientsDesc, prometheus.GaugeValue, float64(c.s.Clients()))
	pool := c.s.JoinPool()
	ch <- prometheus.MustNewConstMetric(poolSizeDesc, prometheus.GaugeValue, float64(pool.Size))
	ch <- prometheus.MustNewConstMetric(poolDesc, prometheus.GaugeValue, float64(pool.Ready))
	ch <- prometheus.MustNewConstMetric(poolTakenDesc, prometheus.CounterValue, float64(pool.Taken))
	ch <- prometheus.MustNewConstMetric(poolMissDesc, prometheus.CounterValue, float64(pool.Missed))
	for _, st := range c.s.Stats() {
		part := strconv.Itoa(st.Partition)
		for _, m := range metrics {
			ch <- prometheus.MustNewConstMetric(m.desc, m.kind, float64(m.get(&st)), part)
		}
	}
}
