package fabric

// Corker is an optional capability of connections whose Post and RingBell
// each send at once, a system call apiece (tcp). Between Cork and Uncork
// they only stage; Uncork sends everything staged with one send, in the
// order it was staged. An initiator that posts requests and then rings the
// bells announcing them corks around both: one send instead of two, and one
// wake-up of the target's thread. A send that fails at Uncork fails the
// connection, as it would have at Post. Cork and Uncork come from the one
// goroutine that posts.
type Corker interface {
	Cork()
	Uncork()
}
