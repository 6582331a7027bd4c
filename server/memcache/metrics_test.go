package memcache

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// The door's counters reach Prometheus: connections, lookups and their
// hits, stores and bad-input closes, each as the door counted it.
func TestCollector(t *testing.T) {
	d := startDoor(t, Config{}, newTestBackend(t, 2, false))
	c := dialDoor(t, d)
	c.send("set a 0 0 1\r\na\r\n")
	c.expect("STORED\r\n")
	c.send("get a b\r\n")
	c.expect("VALUE a 0 1\r\na\r\nEND\r\n")
	bad := dialDoor(t, d)
	bad.send("set k 0 0 1\r\nabcd\r\n") // a data block without its end
	bad.closed()

	if n := testutil.CollectAndCount(d.Collector()); n != len(doorMetrics) {
		t.Errorf("%d metrics collected, want %d", n, len(doorMetrics))
	}
	const want = `
# HELP jakiro_memcached_bad_input_closes_total Connections the door closed for input it could not parse or skip.
# TYPE jakiro_memcached_bad_input_closes_total counter
jakiro_memcached_bad_input_closes_total 1
# HELP jakiro_memcached_connections_total Connections the memcached door accepted.
# TYPE jakiro_memcached_connections_total counter
jakiro_memcached_connections_total 2
# HELP jakiro_memcached_get_hits_total Keys found by the memcached door's lookups.
# TYPE jakiro_memcached_get_hits_total counter
jakiro_memcached_get_hits_total 1
# HELP jakiro_memcached_gets_total Keys the memcached door looked up (get, gets, gat, gats; one per key).
# TYPE jakiro_memcached_gets_total counter
jakiro_memcached_gets_total 2
# HELP jakiro_memcached_sets_total Storage commands through the memcached door (set, add, replace, append, prepend, cas).
# TYPE jakiro_memcached_sets_total counter
jakiro_memcached_sets_total 1
`
	if err := testutil.CollectAndCompare(d.Collector(), strings.NewReader(want),
		"jakiro_memcached_bad_input_closes_total", "jakiro_memcached_connections_total", "jakiro_memcached_get_hits_total",
		"jakiro_memcached_gets_total", "jakiro_memcached_sets_total"); err != nil {
		t.Error(err)
	}
}
