package fabric

import "time"

// DeadlineCloser is a Conn whose Close waits, within a bound of its own,
// for what it owes the peer (fabric/tcp: the answers to requests its NIC
// already applied). CloseBy closes it as Close does, but waits no later
// than deadline: a server shutting down many connections at once gives
// them one deadline, not one bound each.
type DeadlineCloser interface {
	CloseBy(deadline time.Time) error
}

// CloseBy closes c, waiting no later than deadline where c waits at all.
func CloseBy(c Conn, deadline time.Time) error {
	if dc, ok := c.(DeadlineCloser); ok {
		return dc.CloseBy(deadline)
	}
	return c.Close()
}
