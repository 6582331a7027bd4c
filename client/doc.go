// Package client is Jakiro's Go SDK.
//
//	c, err := client.Dial(ctx, "shm:///tmp/jakiro.sock")
//	err = c.Put(ctx, []byte("k"), []byte("v"), 0)
//	v, err := c.Get(ctx, []byte("k"))
//
// A Client is safe for concurrent use: goroutines share its connection and
// drive its protocol engine in turn. For throughput, a Batch pipelines many
// operations over every partition's window at once. Mode (rfp, reply,
// hybrid) and the remote fetch size are options; Counters report fabric
// round trips and retries. Context deadlines are honoured: an operation
// whose context ends returns ctx.Err() (its slot is reclaimed when the
// server's answer arrives).
package client
