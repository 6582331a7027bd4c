package memcache

import (
	"strconv"

	"github.com/jakiro-kv/jakiro/kv"
)

// lru_crawler metadump and stats cachedump 1 list the store's keys as
// memcached 1.6 does (cachedump: ITEM <key> [<bytes> b; <exp> s]), one
// line per item; metadump's lines are
//
//	key=<url-encoded key> exp=<Unix time, -1: never> la=<Unix time> cas=<cas> fetch=<yes|no> size=<value bytes>
//
// then END (la= if the store keeps access times, kv.Config.AccessTimes;
// memcached's cls= is left out: the store has no slab classes). It runs a partition at a
// time, a chunk of at most scanChunk bytes a round (OpScan on the
// partition's goroutine, kv.Partition.Scan), each chunk written before the
// next is made: a dump of any store holds the connection's usual bound.

const (
	scanChunk   = 64 << 10
	scanItems   = 4096 // items looked at per chunk, live or not
	maxDumpLine = 1024 // key=, 250 bytes url-encoded, the numbers
)

// dumpStart begins a dump, metadump's lines or (cache) stats cachedump's,
// of limit items at most (0: all): the first chunk of partition 0.
func (c *conn) dumpStart(cache bool, limit uint64) error {
	c.dumpMore, c.dumpPart, c.dumpAt = true, 0, 0
	c.dumpCache, c.dumpLeft = cache, limit
	return c.dumpNext()
}

// dumpNext adds the dump's next chunk to the round (which then ends).
func (c *conn) dumpNext() error {
	first := c.used
	m := c.cmd()
	m.Op, m.Part, m.Cursor = OpScan, c.dumpPart, c.dumpAt
	m.ScanCache, m.ScanLeft = c.dumpCache, c.dumpLeft
	c.reqs = append(c.reqs, request{kind: kindDump, first: first, n: 1})
	return nil
}

// answerDump writes a chunk and moves the dump on.
func (c *conn) answerDump(m *Cmd) {
	c.w.Write(m.Out[:m.N])
	limited := c.dumpLeft > 0
	if limited {
		c.dumpLeft -= m.Num
	}
	if !m.ScanDone && !(limited && c.dumpLeft == 0) {
		c.dumpAt = m.Cursor
		return
	}
	c.dumpPart, c.dumpAt = c.dumpPart+1, 0
	if c.dumpPart == c.d.be.Partitions() || limited && c.dumpLeft == 0 {
		c.dumpMore = false
		c.w.WriteString("END\r\n")
	}
}

// scan is OpScan's Exec: a chunk of dump lines into Out.
func (c *Cmd) scan(p *kv.Partition) {
	if cap(c.Out) < scanChunk {
		c.N = scanChunk
		if !c.grow() {
			c.postpone()
			return
		}
	}
	out, listed := c.Out[:0], uint64(0)
	c.Cursor, c.ScanDone = p.Scan(c.Cursor, scanItems, func(key []byte, m kv.Meta, vlen int) bool {
		if cap(out)-len(out) < maxDumpLine || c.ScanLeft > 0 && listed == c.ScanLeft {
			return false
		}
		if c.ScanCache {
			out = appendCacheLine(out, key, m, vlen)
		} else {
			out = appendDumpLine(out, key, m, vlen)
		}
		listed++
		return true
	})
	c.N, c.Num, c.Status = len(out), listed, kv.StatusOK
}

func appendDumpLine(b, key []byte, m kv.Meta, vlen int) []byte {
	const hex = "0123456789ABCDEF"
	b = append(b, "key="...)
	for _, ch := range key {
		if 'a' <= ch && ch <= 'z' || 'A' <= ch && ch <= 'Z' || '0' <= ch && ch <= '9' || ch == '-' || ch == '_' || ch == '.' || ch == '~' {
			b = append(b, ch)
		} else {
			b = append(b, '%', hex[ch>>4], hex[ch&15])
		}
	}
	b = append(b, " exp="...)
	if m.Expires == 0 {
		b = append(b, "-1"...)
	} else {
		b = strconv.AppendUint(b, uint64(m.Expires), 10)
	}
	if m.Timed {
		b = append(b, " la="...)
		b = strconv.AppendUint(b, uint64(m.Accessed), 10)
	}
	b = append(b, " cas="...)
	b = strconv.AppendUint(b, m.Version, 10)
	if m.Fetched {
		b = append(b, " fetch=yes"...)
	} else {
		b = append(b, " fetch=no"...)
	}
	b = append(b, " size="...)
	b = strconv.AppendUint(b, uint64(vlen), 10)
	return append(b, "\r\n"...)
}

// appendCacheLine is a stats cachedump line: ITEM <key> [<bytes> b; <exp> s]
// (exp 0: never), as memcached's.
func appendCacheLine(b, key []byte, m kv.Meta, vlen int) []byte {
	b = append(b, "ITEM "...)
	b = append(b, key...)
	b = append(b, " ["...)
	b = strconv.AppendUint(b, uint64(vlen), 10)
	b = append(b, " b; "...)
	b = strconv.AppendUint(b, uint64(m.Expires), 10)
	return append(b, " s]\r\n"...)
}
