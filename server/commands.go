package server

import (
	"github.com/jakiro-kv/jakiro/kv"
	"github.com/jakiro-kv/jakiro/rfp"
)

// command runs one of the memcached commands (rfp/commands.go) on the
// partition's store: key checked and owned by this partition already. It
// returns the status and the length of the response value written to val.
// Extras that do not parse are StatusBadRequest; nothing here panics.
func (p *partition) command(r *rfp.Request, h uint64, val []byte) (rfp.Status, int) {
	switch r.Op {
	case rfp.OpGets, rfp.OpGat, rfp.OpTouch:
		if len(r.Value) != 0 || len(val) < rfp.MetaLen {
			return rfp.StatusBadRequest, 0
		}
		var n int
		var m kv.Meta
		var st kv.Status
		switch r.Op {
		case rfp.OpGets:
			n, m, st = p.kv.GetItem(h, r.Key, val[rfp.MetaLen:])
		case rfp.OpGat:
			n, m, st = p.kv.GetAndTouch(h, r.Key, val[rfp.MetaLen:], r.TTL)
		default:
			m, st = p.kv.Touch(h, r.Key, r.TTL)
		}
		if st != kv.StatusOK {
			return statusOf(st), 0
		}
		rfp.PutMeta(val, m.Version, m.Flags)
		return rfp.StatusOK, rfp.MetaLen + n
	case rfp.OpStore:
		a, v, ok := rfp.ParseStoreArgs(r.Value)
		if !ok || len(val) < 8 {
			return rfp.StatusBadRequest, 0
		}
		ver, st := p.kv.Store(h, r.Key, v, r.TTL, a.Flags, kv.StoreMode(a.Mode), a.CAS)
		if st != kv.StatusOK {
			return statusOf(st), 0
		}
		rfp.PutVersion(val, ver)
		return rfp.StatusOK, 8
	case rfp.OpIncr:
		a, ok := rfp.ParseIncrArgs(r.Value)
		if !ok || len(val) < rfp.IncrResultLen {
			return rfp.StatusBadRequest, 0
		}
		num, ver, st := p.kv.Incr(h, r.Key, a.Delta, a.Decr, a.Create, a.Initial, r.TTL, a.Flags)
		if st != kv.StatusOK {
			return statusOf(st), 0
		}
		rfp.PutIncrResult(val, num, ver)
		return rfp.StatusOK, rfp.IncrResultLen
	}
	return rfp.StatusBadRequest, 0
}
