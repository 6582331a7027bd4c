// Package fabricbench measures a fabric provider's raw one-sided
// throughput, with nothing of Jakiro's protocol above it. It is a plain
// package (no testing import) so both `go test -bench` and the jakiro-bench
// CLI use it.
//
// Serve is the target: it grants every connection one region and then
// does nothing, as one-sided operations need no target CPU. Run (or RunN)
// is the initiator side: each of `initiators` goroutines owns a connection
// and keeps `window` operations of `size` bytes in flight, reposting each
// one as its completion is reaped. StartServer runs Serve in a child
// process (the current binary, re-executed), which must call
// ServeChildIfRequested first thing in main or TestMain.
//
// ServeEcho is the other target, the floor under one request at a time:
// a goroutine per connection copies each 32 B request written into its
// region into a response slot, which the initiator (Echo.RoundTrip) READs
// again at once until it is there. StartEcho runs it in a child process.
// server's BenchmarkEchoLatency and `jakiro-bench onebyone` both use it.
package fabricbench
