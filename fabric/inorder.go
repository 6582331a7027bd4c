package fabric

// InOrderWriter is implemented by connections whose peer applies this
// side's WRITEs whole and in posting order (tcp: one stream, applied by
// the peer's NIC frame by frame): a WRITE posted before another is in the
// target's memory by the time the later one is. A protocol can then post
// a WRITE that must land first (a control block) and go on without
// waiting for its completion.
type InOrderWriter interface {
	WritesInOrder() bool
}

// WritesInOrder says whether c's peer applies c's WRITEs in posting order
// (InOrderWriter).
func WritesInOrder(c Conn) bool {
	w, ok := c.(InOrderWriter)
	return ok && w.WritesInOrder()
}
