package memcache

import (
	"fmt"
	"net"
	"strconv"
	"sync/atomic"

	"github.com/jakiro-kv/jakiro/kv"
)

// The commands operators and their tools send, answered as memcached 1.6
// answers them where the door has the same thing to say, and with what is
// true of the door where it has not (no slabs, memory fixed at start).

// stats subcommands (request.args of kindStats).
const (
	statsGeneral  = iota // stats
	statsSettings        // stats settings
	statsNone            // stats items, slabs, sizes, conns, cachedump: no slab classes, no lines
)

// asciiStats: stats [settings|items|slabs|sizes|conns|cachedump <class> <limit>].
func (c *conn) asciiStats(t [][]byte) error {
	q := request{kind: kindStats}
	if len(t) > 1 {
		switch string(t[1]) {
		case "settings":
			q.args = statsSettings
		case "items", "slabs", "sizes", "conns":
			q.args = statsNone
		case "cachedump":
			// stats cachedump <class> <limit>: memcached lists a slab
			// class's items (limit 0: all). The store has no slab
			// classes: class 1 lists every item (dump.go), as memcdump
			// reads them, the others none.
			if len(t) != 4 {
				return c.localASCII("CLIENT_ERROR bad command line", false)
			}
			class, ok := parseUint(t[2], 32)
			if !ok {
				return c.localASCII("CLIENT_ERROR bad command line format", false)
			}
			limit, ok := parseUint(t[3], 32)
			if !ok {
				return c.localASCII("CLIENT_ERROR bad command line format", false)
			}
			if class == 1 {
				return c.dumpStart(true, limit)
			}
			q.args = statsNone
		case "detail":
			return c.localASCII("CLIENT_ERROR usage: stats detail on|off|dump", false)
		case "reset":
			// The door's counters restart from 0 (the partitions' are
			// theirs: EREW, and other clients read them).
			if len(t) != 2 {
				return c.localASCII("ERROR", false)
			}
			c.reqs = append(c.reqs, request{kind: kindReset})
			return nil
		default:
			return c.localASCII("ERROR", false)
		}
	}
	c.reqs = append(c.reqs, q)
	return nil
}

// settings are the door's answers to stats settings, under memcached's
// names, each true of the door.
func (d *Door) settings() []Stat {
	var maxbytes string
	for _, s := range d.be.Stats() {
		if s.Name == "limit_maxbytes" {
			maxbytes = s.Value
		}
	}
	port := "0"
	if _, p, err := net.SplitHostPort(d.Addr()); err == nil {
		port = p
	}
	yesNo := func(b bool) string {
		if b {
			return "yes"
		}
		return "no"
	}
	evictions := "on" // a Backend that cannot say is a cache
	if e, ok := d.be.(interface{ Evicts() bool }); ok && !e.Evicts() {
		evictions = "off"
	}
	return []Stat{
		{"maxbytes", maxbytes},
		{"maxconns", strconv.Itoa(d.cfg.MaxConns)},
		{"tcpport", port},
		{"udpport", "0"},
		{"domain_socket", "NULL"},
		{"verbosity", "0"},
		{"evictions", evictions},
		{"num_threads", strconv.Itoa(d.be.Partitions())},
		{"cas_enabled", "yes"},
		{"binding_protocol", "auto-negotiate"},
		{"auth_enabled_sasl", yesNo(d.cfg.AuthToken != "")},
		{"auth_enabled_ascii", "no"},
		{"item_size_max", strconv.Itoa(d.be.MaxValue())},
		{"flush_enabled", "yes"},
		{"dump_enabled", "yes"},
		{"idle_timeout", fmt.Sprint(int64(d.cfg.IdleTimeout.Seconds()))},
		{"slab_reassign", "no"},
		{"slab_automove", "0"},
		{"lru_crawler", "yes"},
	}
}

// asciiFlush: flush_all [delay] [noreply]; a delay that is not a number is
// an exptime error, a negative one flushes now, as memcached 1.6.
func (c *conn) asciiFlush(t [][]byte) error {
	noreply := len(t) > 1 && string(t[len(t)-1]) == "noreply"
	if len(t) > 3 {
		return c.localASCII("ERROR", false)
	}
	var delay int64
	if len(t) > 1 && !(len(t) == 2 && noreply) {
		var ok bool
		if delay, ok = parseInt(t[1]); !ok {
			return c.localASCII("CLIENT_ERROR invalid exptime argument", noreply)
		}
		delay = max(delay, 0)
	}
	ttl, _ := c.ttl(delay)
	first, k := c.flushCmds(ttl)
	c.reqs = append(c.reqs, request{kind: kindFlush, first: first, n: k, noreply: noreply})
	return nil
}

// asciiAdmin: cache_memlimit, slabs automove, lru_crawler.
func (c *conn) asciiAdmin(t [][]byte) error {
	switch string(t[0]) {
	case "cache_memlimit":
		// cache_memlimit <megabytes> [noreply]: the store's items take at
		// most that much from now on (kv.Partition.SetLimit, split
		// evenly among the partitions; above --memory's log, all of it).
		noreply, ok := tail(t, 2)
		var mb uint64
		if ok {
			mb, ok = parseUint(t[1], 32)
		}
		if !ok {
			return c.localASCII("ERROR", false)
		}
		parts := uint64(c.d.be.Partitions())
		least := max(8, (kv.MinLimit(c.d.be.MaxValue())*parts+1<<20-1)>>20)
		if mb < least {
			return c.localASCII(fmt.Sprintf("MEMLIMIT_TOO_SMALL cannot set maxbytes to less than %dm", least), noreply)
		}
		first := c.used
		for p := range c.d.be.Partitions() {
			m := c.cmd()
			m.Op, m.Part, m.Num = OpLimit, p, mb<<20/parts
		}
		c.reqs = append(c.reqs, request{kind: kindFlush, first: first, n: c.used - first, noreply: noreply})
		return nil
	case "slabs":
		// slabs automove <0|1|2>: accepted (the store has no slabs to
		// move); other slabs commands are memcached's own.
		if len(t) >= 2 && string(t[1]) == "automove" {
			noreply, ok := tail(t, 3)
			if !ok {
				return c.localASCII("ERROR", false)
			}
			v, ok := parseUint(t[2], 32)
			if !ok {
				return c.localASCII("CLIENT_ERROR bad command line format", noreply)
			}
			if v > 2 {
				return c.localASCII("ERROR", false)
			}
			return c.localASCII("OK", noreply)
		}
	case "lru_crawler":
		// lru_crawler metadump <all|hash|classes>: every key (dump.go).
		if len(t) == 3 && string(t[1]) == "metadump" {
			return c.dumpStart(false, 0)
		}
	}
	return c.localASCII("ERROR", false)
}

// resetCounters is stats reset: the door's command counters from 0.
func (d *Door) resetCounters() {
	for _, c := range []*atomic.Uint64{&d.cmdGet, &d.cmdSet, &d.cmdTouch, &d.getHits, &d.getMisses, &d.cmdFlush, &d.authFails, &d.idleKicks, &d.refused} {
		c.Store(0)
	}
	d.totalConns.Store(d.curConns.Load())
}
