// Package ycsb holds Jakiro's go-ycsb drivers and an in-process runner.
//
// Importing it registers two go-ycsb databases (ycsb.RegisterDBCreator):
//
//   - "jakiro": go-ycsb threads share one client.Client, over any fabric
//     URL, which spreads them over its connections and drives them as it
//     does for any program with many goroutines.
//     Properties: jakiro.conns (override: N clients, thread i uses client
//     i mod N), jakiro.addr (fabric URL, default shm:///tmp/jakiro.sock;
//     a comma-separated list spreads keys over many servers, see
//     client.Dial),
//     jakiro.mode (rfp|reply|hybrid), jakiro.rfs (bytes, or auto),
//     jakiro.window (outstanding requests per partition, 0 = server's),
//     jakiro.ttl (seconds, 0 = none). A record (YCSB field map) is
//     encoded compactly into one value (see EncodeRecord); batch.size > 1
//     pipelines through client.Batch. Read allocates nothing: the map it
//     returns, and its values, are the thread's until its next Read (go-ycsb's
//     workloads are through with them by then).
//   - "memcached": go-ycsb v1.0.1 has no memcached driver; this one uses
//     github.com/bradfitz/gomemcache with the same record encoding.
//     Properties: memcached.addr (host:port, default 127.0.0.1:11211),
//     memcached.timeout (default 1s).
//
// Neither store orders keys, so Scan fails with ErrScanUnsupported: YCSB
// workload E reports the error per operation and goes on.
//
// Run executes a go-ycsb workload against a registered database in this
// process, bounded by an operation count and a duration, and measures
// every operation with an HdrHistogram in nanoseconds (go-ycsb's own
// measurement is microsecond-grained and global).
package ycsb
