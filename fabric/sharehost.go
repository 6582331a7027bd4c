package fabric

// HostSharer is implemented by connections that know whether their peer
// runs on this host (shm always; tcp over loopback or to one of this
// host's own addresses). There, a peer slow to answer is most often one
// starved of CPU by this host's other work, waiting included.
type HostSharer interface {
	SharesHost() bool
}

// SharesHost says whether c's peer runs on this host (HostSharer).
func SharesHost(c Conn) bool {
	h, ok := c.(HostSharer)
	return ok && h.SharesHost()
}
