package fabric

import (
	"fmt"
	"runtime"
)

// Read copies n bytes of remote[roff:] into local[loff:] and waits for the
// completion. The connection must have nothing else outstanding.
func Read(c Conn, local *Region, loff int, remote Desc, roff uint64, n int) error {
	return do(c, Op{Kind: OpRead, Local: local, LocalOff: loff, Len: n, Remote: remote, RemoteOff: roff})
}

// Write copies n bytes of local[loff:] into remote[roff:] and waits for the
// completion. The connection must have nothing else outstanding.
func Write(c Conn, local *Region, loff int, remote Desc, roff uint64, n int) error {
	return do(c, Op{Kind: OpWrite, Local: local, LocalOff: loff, Len: n, Remote: remote, RemoteOff: roff})
}

func do(c Conn, op Op) error {
	ops := [1]Op{op}
	if err := c.Post(ops[:]); err != nil {
		return err
	}
	var cs [1]Completion
	for spins := 0; ; spins++ {
		n, err := c.Poll(cs[:])
		if err != nil {
			return err
		}
		if n == 1 {
			if cs[0].ID != op.ID {
				return fmt.Errorf("fabric: blocking %v got completion %d, want %d: other ops were outstanding", op.Kind, cs[0].ID, op.ID)
			}
			return cs[0].Err
		}
		if spins > 64 {
			runtime.Gosched()
		}
	}
}
