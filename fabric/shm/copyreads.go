package shm

// ReadsCopy: a READ is a copy from the peer's memory mapped here, made in
// Post on the caller's thread (fabric.CopyReader).
func (c *conn) ReadsCopy() bool { return true }

// SharesHost implements fabric.HostSharer: the peer maps this memory.
func (c *conn) SharesHost() bool { return true }
