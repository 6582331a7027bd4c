// Package rfp is the Remote Fetching Paradigm protocol: how a Jakiro client
// and server talk over any fabric (see package fabric) without the server
// ever sending anything in the classic RFP mode.
//
// # Memory
//
// At connect, the server grants each client one region in the client's
// own protection domain. Its Layout holds a control block and, for each
// server partition, a request ring and a response ring of Slots slots each.
// The client owns a local region of the same geometry that serves as WRITE
// source and READ target, and as the target of server WRITEs in reply mode.
// Dial sets a client's side up (handshake, local region, control block)
// and returns it as a Link; Listener.Accept is the server's side.
//
// # One operation
//
//  1. Send: the client picks the partition from the key hash and WRITEs the
//     request into its next request slot with one fabric WRITE.
//  2. Serve: the partition's goroutine finds the slot complete (sequence
//     number expected and checksum valid), runs it, writes the result into
//     the matching response slot in its own memory, header last.
//  3. Fetch: the client READs RFS bytes of the response slot: header and
//     value come back together. Sequence not yet there: READ again. Value
//     longer than RFS-8: one more READ of the rest.
//
// # The client engine
//
// Engine is the client side as a pure state machine, in the manner of etcd
// raft: it does no I/O and reads no clock. A driver (package client) owns
// the fabric connection and feeds the engine steps — Submit a request,
// Complete a fabric completion, Tick at a time — each with its clock in
// nanoseconds; the engine answers with the operations to post (Pending,
// then Posted), the partitions whose doorbells to ring after posting them
// (Rings, then Rang), the finished requests (Results, then Consumed, which
// frees their slots) and Next, the earliest time Tick has work. It reads
// and writes only its local region's bytes: requests are encoded there,
// READs and replies land there, and each response is parsed and
// checksummed once, its status and value length kept for the Result.
//
// When to fetch: the first READ waits a FetchDelay that adapts to how
// often first READs find nothing (about 1%; faster towards short delays
// for a request alone in flight, where only latency is at stake). Retries
// back off per request up to 20 µs. A partition answers a client's
// requests in ring order, so while an older request has missed and not
// yet been found ready, younger ones of that partition are not fetched.
// AutoRFS moves the fetch size to cover the values seen.
//
// The mode is one ReplyPolicy (Mode.Policy): it decides per request
// whether to set FlagReply, asking the server to WRITE the response slot
// into the client's local region as well, where the engine polls it
// (Tick). ModeRFP never asks, ModeReply always does, and Hybrid switches
// to replies when fetching keeps finding results not ready and back when
// fetching pays.
//
// Doorbells (bells.go) wake partitions that stopped polling: a request
// rings its partition when none went there for QuietRing; requests left
// unanswered ring on one schedule per partition, RingAfter and then twice
// as long each time up to MaxRingGap, restarted by every answer. Counters
// count rings beside fabric operations (RingsPerOp, FabricOpsPerOp).
//
// # Slots and torn writes
//
// A fabric WRITE or READ may be observed torn (bytes in any order), so every
// slot ends with a 32-bit checksum over all of it, sequence number included:
// a reader accepts a slot only when the sequence number it expects is in the
// header and the checksum matches. A reader never returns a half-written
// value. Slots are reused only after their previous result was consumed, so
// a writer never overwrites bytes a reader still needs.
//
//	request:  seq u32 | op u8 | flags u8 | klen u16 | vlen u32 | ttl u32 | key | value | sum u32
//	response: seq u8 | status u4 + vlen u20 | value | sum u32
//
// The memcached commands (OpGets, OpGat, OpTouch, OpStore, OpIncr,
// OpFlush) use the same slots: their arguments beyond key, value and TTL
// lead the request's value and their results (version, flags, counter)
// the response's (commands.go), so GET, PUT and DELETE are unchanged.
//
// The response header is the paper's 4 bytes (2 B header + 2 B length, here
// packed with a 20-bit length so values reach 1 MiB-1); the 4-byte checksum
// makes the RFS that covers a 32 B value 40 rather than the paper's 36.
//
// Everything a peer writes is untrusted: decoders bounds-check and return
// errors; nothing here panics on peer bytes.
package rfp
