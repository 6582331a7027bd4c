package fabric

// CopyReader is implemented by connections whose READ is a copy the
// caller's own thread makes from memory it maps (shm): a READ costs a few
// cache lines, no NIC operation and no CPU of the peer's, so a client may
// READ as often as it likes, and should for latency.
type CopyReader interface {
	ReadsCopy() bool
}

// ReadsCopy says whether c's READs are local copies (CopyReader).
func ReadsCopy(c Conn) bool {
	r, ok := c.(CopyReader)
	return ok && r.ReadsCopy()
}
