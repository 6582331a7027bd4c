// Package rfp is the Remote Fetching Paradigm protocol: how a Jakiro client
// and server talk over any fabric (see package fabric) without the server
// ever sending anything in the classic RFP mode.
//
// # Memory
//
// At connect, the server grants each client one region in the client's
// own protection domain. Its Layout holds a control block and, for each
// server partition, a request ring (ReqRing bytes, default 16 KiB) and a
// response ring (RespRing bytes, default 32 KiB) of variable-length
// records, sized by the server's flags and independent of its largest
// value. The client owns a local region of the same geometry that serves
// as WRITE source and READ target, and as the target of server WRITEs in
// reply mode. Dial sets a client's side up (handshake, local region,
// control block) and returns it as a Link; Listener.Accept is the
// server's side. Where the fabric applies a connection's WRITEs in order
// (tcp: fabric.InOrderWriter) the control block's WRITE is left to the
// Link's owner, who posts it with its first requests (Link.Control): it
// lands before them, and a join is the fabric's connect and one exchange
// (hello, welcome), with nothing sent until the first request. The handshake carries one protocol Version; a peer of
// another version gets an error naming both (ErrVersion).
//
// # One operation, and k of them
//
//  1. Send: the client picks the partition from the key hash and puts the
//     request's record at its request ring's write position. Every record
//     put for a partition since the last post goes out in one fabric
//     WRITE (two where the span crosses the ring's end).
//  2. Serve: the partition's goroutine finds the next records complete
//     (sequence number expected and checksum valid), runs them in ring
//     order, and writes each result as a record at its response ring's
//     write position in its own memory, sequence number last.
//  3. Fetch: when the oldest request falls due, the client READs from the
//     oldest response on, as many bytes as the requests in flight expect
//     (RFS each): every response ready comes back in that one READ. Not
//     yet there: READ again. A response longer than what was fetched: one
//     more READ of the rest.
//
// A request's record carries its response budget: the longest value the
// client reserved room for (Layout.CallBudget). A longer value comes in
// pieces: the first with the response, the rest through piece requests
// that the session serves from a copy it keeps (Session.Respond); a
// request too long for one record goes as parts, joined by the session.
// Both stay one-sided and checked, and are bounded per client (its
// LongShare first, then the listener's LongBudget pool) and in time (a
// long value left without progress for DefaultLongHold is dropped): a
// client holding long values open costs only itself (longhold.go). The client keeps the response bytes its records in flight
// may take (and one record of wrap waste) within the ring, so the server
// never overwrites a response the client has not taken.
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
// frees their room) and Next, the earliest time Tick has work. It reads
// and writes only its local region's bytes: requests are encoded there,
// READs and replies land there, and each response is parsed and
// checksummed once, its status and value length kept for the Result.
//
// When to fetch: the first READ waits a FetchDelay that adapts to how
// often first READs find nothing (about 1%; faster towards short delays
// for a request alone in flight, where only latency is at stake). Retries
// back off per request up to 20 µs. Where a READ is a copy from mapped
// memory (shm, EngineConfig.CopyReads) it costs no NIC operation and no
// server CPU: there the first READ goes with the request and a miss is
// READ again at the next step, for latency. A partition answers a client's
// requests in ring order, so while an older request has missed and not
// yet been found ready, younger ones of that partition are not fetched.
// AutoRFS moves the fetch size to cover the values seen.
//
// The mode is one ReplyPolicy (Mode.Policy): it decides per request
// whether to set FlagReply, asking the server to WRITE the response
// record into the client's local region as well (the records of one pass
// as one WRITE), where the engine polls it (Tick). A partition's requests
// in flight are all fetched or all replied to: a READ never lands over a
// reply. ModeRFP never asks, ModeReply always does, and Hybrid switches
// to replies when fetching keeps finding results not ready and back when
// fetching pays.
//
// Doorbells (bells.go) wake partitions that stopped polling: a request
// rings its partition when none went there for QuietRing; requests left
// unanswered ring on one schedule per partition, RingAfter and then twice
// as long each time up to MaxRingGap, restarted by every answer. Counters
// count rings beside fabric operations (RingsPerOp, FabricOpsPerOp).
//
// # Records and torn writes
//
// A fabric WRITE or READ may be observed torn (bytes in any order), so every
// record ends with a 32-bit checksum over all of it, sequence number
// included: a reader accepts a record only when the sequence number it
// expects is in the header and the checksum matches. A reader never
// returns a half-written value. Ring bytes are reused only after their
// record was answered (requests) or consumed (responses), so a writer
// never overwrites bytes a reader still needs. Record formats: record.go.
//
// The memcached commands (OpGets, OpGat, OpTouch, OpStore, OpIncr,
// OpFlush) use the same records: their arguments beyond key, value and TTL
// lead the request's value and their results (version, flags, counter)
// the response's (commands.go), so GET, PUT and DELETE are unchanged.
//
// The response header is 8 bytes (the paper's is 4: here the sequence
// number is 32 bits, as records of a lap are not tied to slots, and the
// length 24 bits), and records start on cache lines, so the RFS that
// covers a 32 B value is 64 (its record's line) rather than the paper's
// 36.
//
// Everything a peer writes is untrusted: decoders bounds-check and return
// errors; nothing here panics on peer bytes.
package rfp
