package rfp

import "github.com/jakiro-kv/jakiro/fabric"

// AfterDone arranges for f to run in its own goroutine once the session's
// connection ends (fabric.AfterDone): watching a session costs no
// goroutine while it lives, where the fabric can say so itself. stop
// reports whether it kept f from starting.
func (s *Session) AfterDone(f func()) (stop func() bool) { return fabric.AfterDone(s.conn, f) }
