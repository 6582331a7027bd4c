// Package fabrictest is the conformance suite every fabric provider runs:
// one suite, so the protocol above can rely on the same behaviour from
// shm, tcp and verbs.
//
// A provider's test calls it like this:
//
//	func TestMain(m *testing.M) { fabrictest.Main(m) }
//
//	func TestConformance(t *testing.T) {
//		fabrictest.Run(t, func(t *testing.T) string { return freshURL(t) })
//	}
//
// Main is required: the cross-process case re-executes the test binary
// (os.Args[0]) with FABRICTEST_ROLE set, and Main runs that role instead
// of the tests. newAddr must return a URL nobody listens on yet each time
// it is called.
//
// Cases (subtests of Run):
//
//	ReadWrite     WRITE/READ of 1 B to 1 MiB both ways, odd offsets, guards, Sub descs
//	Batch         batches complete in posting order with their IDs and kinds
//	QueueDepth    Options.QueueDepth bounds unpolled ops; ErrQueueFull posts nothing
//	Regions       Alloc is zeroed, bounded by DomainSize; late regions are reachable
//	RemoteAccess  out-of-bounds, wrapped, bad and foreign keys give ErrRemoteAccess
//	LocalAccess   bad local side fails Post with ErrLocalAccess and posts nothing
//	PrivateData   handshake data at the limits, over them, and rejection
//	Concurrent    16 connections from 16 goroutines, each verifying its own data
//	PeerClose     closing one end: ErrClosed here, ErrPeerGone there, promptly
//	CrossProcess  peer in another process: data both ways, isolation, SIGKILL
//
// The suite relies on one guarantee beyond the ordering contract's text,
// which RC gives: a READ posted after a WRITE on the same connection sees
// that WRITE's data.
//
// Every case is bounded in time (context timeouts, polling deadlines) and
// modest in size (transfers up to 1 MiB, at most 16 connections), so it
// also runs on software-emulated RDMA inside a VM. Cases that provoke a
// remote access error use a connection of their own, since a verbs queue
// pair is dead after one. The suite relies only on the contract of package
// fabric: target-side visibility of a WRITE is awaited, not assumed.
package fabrictest
