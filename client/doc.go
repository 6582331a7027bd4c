// Package client is Jakiro's Go SDK.
//
//	import _ "github.com/jakiro-kv/jakiro/fabric/providers" // the fabrics to dial
//
//	c, err := client.Dial(ctx, "shm:///tmp/jakiro.sock")
//	err = c.Put(ctx, []byte("k"), []byte("v"), 0)
//	v, err := c.Get(ctx, []byte("k"))
//
// A Client is safe for concurrent use, and one Client serves a whole
// process: its callers spread over a few connections to each server
// (lanes, one per poll group, dialled as concurrent callers first need
// them; WithConns fixes the count), chosen per P so callers on different
// cores seldom meet. A caller queues its request on its lane and parks;
// the connections are driven in poll groups (half the machine's cores,
// at most one per P, at least one), each by one of its waiting callers at
// a time: the driver
// moves every queued request of the group's connections into their rings
// (one WRITE per partition for all of them), polls the answers and
// wakes exactly the callers they belong to; when its own answers are in
// it hands the role to a caller still waiting, and while the group has
// few callers (128) a caller that runs before the one handed it takes the
// role over rather than park (so the group is not left undriven while the
// handed one waits in the run queue); with more callers a driver drives on
// 40 µs past its own answers, so the role changes hands less often. Over
// tcp, where a post is
// a send, it holds the new calls of callers it answered together until
// they have all called again (20 µs at most), so they share one send.
// A group with nothing in flight spins nowhere, and a process spins on
// at most as many cores as it has groups, so a client on the server's
// machine (shm, loopback tcp) leaves the server's partitions the cores
// they need; on shm a driver whose answers stall for 10 µs (the
// partition's thread lost its core) gives its own core away at once. Nothing the whole
// process shares is written on the operation path (a group's caller
// count is its group's: its callers mostly run on one P). For throughput from
// one goroutine, a Batch pipelines many operations over every partition's
// window at once. Mode (auto, rfp, reply, hybrid) and the remote fetch
// size are options; Counters report fabric round trips, retries and
// doorbell rings. Context deadlines are honoured: an operation whose
// context ends returns ctx.Err() (its room is reclaimed when the
// server's answer arrives).
//
// The package re-exports what callers need of the protocol (Mode, Counters,
// limits), so programs import client, not rfp. Fabric providers register
// themselves when linked: a program imports fabric/providers (or the
// providers it wants) once.
//
// Many servers: Dial takes a comma-separated list of fabric URLs, in any
// mix of fabrics ("tcp://a:7000,shm:///tmp/b.sock"), or WithServers. Each
// key lives on one server, chosen by rendezvous hashing of the key over
// the addresses as written (their order does not matter; adding a server
// moves about 1/N of the keys). A Batch is split per server and the parts
// run in parallel. With one server nothing of this costs anything on the
// operation path.
//
// Failures: a server whose connection breaks (it stopped, crashed or
// restarted) is dialled again in the background with capped, jittered
// exponential backoff (10 ms doubling to 400 ms); meanwhile its keys fail
// at once with ErrUnavailable (wrapping ErrConnLost and the fabric's
// cause, or the last dial error), the other servers' keys are served, and
// within about 400 ms of the server being back its keys are served again.
// An operation in flight when a connection breaks fails with ErrConnLost
// (a Batch's too, each in its Result) and may or may not have taken effect. A server that hangs without
// closing its connection is not detected: bound operations with context
// deadlines. ServerCounters reports each server's counters and connection
// state, ServerStats each server's statistics.
package client
