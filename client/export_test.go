package client

// SetAloneNS sets how long a lone caller polls in place (alone.go) and
// returns the previous bound.
func SetAloneNS(ns int64) int64 {
	old := aloneNS
	aloneNS = ns
	return old
}

// Alones counts the calls and batches c's connections ran alone to the
// end.
func Alones(c *Client) uint64 {
	var n uint64
	for _, s := range c.servers {
		if cn := s.cur.Load(); cn != nil {
			cn.mu.Lock()
			n += cn.alones
			cn.mu.Unlock()
		}
	}
	return n
}
