package fabric

// Penalizer is implemented by acceptor-side connections whose listener
// paces sources that cost it without doing work (tcp's churn pacing).
// Penalize says the peer broke the protocol above the fabric (the server
// is closing the connection for it): its source is charged as for a
// connection that asked for nothing, so a loop of such peers is paced as a
// loop of handshakes is, while honest clients are never charged.
type Penalizer interface {
	Penalize()
}
