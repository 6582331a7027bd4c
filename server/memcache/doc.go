// Package memcache is Jakiro's memcached door: a listener that speaks
// memcached's ascii and binary protocols over TCP, so that any language's
// memcached client and every memcached tool can use a Jakiro server, while
// Go clients keep the RFP fast path. Both reach the same partitions and
// memory: a value written by one is read by the other.
//
// # Contract
//
//   - EREW holds: a connection never touches the store. It parses a round
//     of pipelined requests, turns each into single-key commands (Cmd; a
//     multi-key get into one per key, flush_all into one per partition),
//     hands each partition its commands in one Batch through the Backend,
//     and the partition's goroutine runs them (Cmd.Exec) and signals the
//     connection's Group. Answers go out in request order, in one write.
//   - One goroutine per connection on Go's netpoller: no thread per
//     connection. After a round a connection polls its socket for
//     Config.Spin before it waits there (spin.go): in epochs, so that the
//     netpoller still polls for everyone else, by at most spinMax
//     connections, and not while the Backend's partitions poll.
//   - Every wait is bounded: a round's bytes after its first must arrive
//     within ReadTimeout, its answers must be taken within WriteTimeout (a
//     client that does not read is disconnected), the partitions must
//     answer within RunTimeout. An idle connection waits without a
//     deadline until Close, as memcached's clients expect, unless
//     Config.IdleTimeout is set.
//   - Memory per connection is bounded (Door.ConnBound), not by what a
//     client sends: a round holds at most maxRoundCmds commands (a get
//     line's keys are read a key at a time, a round's worth at once) and
//     RoundBytes of values; a get whose value would pass it runs after
//     the answers before it are written (limiter, in cmd.go); nothing more
//     is read while a round's answers are being written.
//   - Bad input never harms anyone else: a line over MaxLine (but a
//     get's), a length over what can be skipped (maxSwallow), a data block
//     without its "\r\n", a binary header whose lengths do not add up:
//     the connection gets an error and is closed. What memcached 1.6
//     answers with an error and goes on (unknown commands, malformed
//     storage lines, a value over the maximum, bad numbers, noreply
//     included), the door answers the same way (compat_test.go checks
//     each against memcached 1.6.18's answers); an HTTP request line
//     closes the connection, as memcached's.
//   - Commands: the ascii protocol, the meta commands (meta.go), the
//     operators' (admin.go: stats settings/reset/cachedump, cache_memlimit,
//     lru_crawler metadump, streamed by dump.go) and the binary protocol.
//   - Authentication: with Config.AuthToken, binary SASL PLAIN with the
//     token as password is required before any other command, and ascii is
//     refused; without it, a non-loopback address is refused unless
//     Config.Insecure (protected mode, as the RFP listener). A failed
//     attempt is answered after authDelay; maxAuthFails close the
//     connection.
//   - Semantics are memcached 1.6's: exptimes over 30 days are absolute
//     Unix times and negative ones expire at once, incr wraps at 2^64 and
//     decr stops at 0, cas uniques are the items' versions (kv.Meta). An
//     item's access history (mg's h and l, me's and metadump's fetch= and
//     la=) is the store's, before the command: every read counts, an RFP
//     client's Get as much as a get here; mg u and me read without
//     counting. l needs kv.Config.AccessTimes (4 bytes an item), which
//     `jakiro server --memcached` sets. Serve-stale (md and ms I, mg N
//     and R, answered X, W, Z) is memcached's too (stale.go), and so are
//     the meta writes' C, N, T, E and md's x (metawrite.go): every meta
//     command takes every flag memcached 1.6 knows, T and N act where
//     they stand among the flags, and only E0 is refused (the store keeps
//     no cas of 0; memcached would).
//
// memccapable (libmemcached-tools) passes whole against it; `make test`
// runs it (scripts/memcapable.sh).
package memcache
