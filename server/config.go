package server

import (
	"fmt"
	"runtime"
	"time"

	"github.com/jakiro-kv/jakiro/fabric"
	"github.com/jakiro-kv/jakiro/kv"
	"github.com/jakiro-kv/jakiro/rfp"
)

// Config configures a server. Zero values take defaults.
type Config struct {
	Listen     string // fabric URL, default shm:///tmp/jakiro.sock
	Partitions int    // default DefaultPartitions()
	Memory     int64  // store budget, default 1 GiB
	MaxValue   int    // largest value, default 64 KiB (rings need not hold it)
	// DoorMaxValue is the largest value the memcached door takes (0:
	// MaxValue); the store takes the larger of the two. An RFP client
	// asking for a value over MaxValue gets StatusTooLarge.
	DoorMaxValue int
	Slots        int // requests in flight per client per partition, default 8
	// ReqRing and RespRing are each client's ring sizes per partition in
	// bytes; 0 takes rfp's defaults (16 KiB and 32 KiB).
	ReqRing, RespRing int
	MaxClients        int  // clients at once, default rfp.DefaultMaxClients
	Store             bool // store mode: no eviction, out-of-memory errors
	// ItemSize is the expected key+value bytes per item; it splits Memory
	// between index and log (kv.Config.AvgItemSize, default 48).
	ItemSize  int
	ApproxLRU bool
	// SpinIdle is how long a partition keeps polling (yielding its core
	// between passes) after its last request before it blocks on its
	// doorbell: at least rfp.IdleBeforeSleep (on tcp TCPIdleBeforeSleep),
	// the default; up to 10 times
	// it while rings end the partition's sleeps early. With no
	// doorbells it dozes instead, in sleeps of DozeSleep (default 20µs).
	SpinIdle  time.Duration
	DozeSleep time.Duration
	// IdlePoll makes idle partitions poll every client every DozeSleep
	// instead of blocking on their doorbells: a tighter wake-up bound for
	// some idle CPU. Fabrics without doorbells (verbs) always poll.
	IdlePoll bool
	// ReplyTimeout bounds how long a partition waits to post one reply
	// WRITE (default rfp.DefaultReplyTimeout); a client that takes none
	// in that time is disconnected.
	ReplyTimeout time.Duration
	// JoinPool is how many connections the listener prepares before
	// anyone dials, so that a new client's join does not wait for them
	// (fabric.Options.Ready; on shm a sealed, mapped domain each, a page
	// of memory and a descriptor while it waits); 0 takes
	// DefaultJoinPool, a negative value none. Fabric.Ready, if set, wins.
	JoinPool int
	Fabric   fabric.Options
	Logf     func(format string, args ...any)
	// AuthToken, if set, is the token every client must present;
	// Insecure lets a network listener other than loopback go without
	// one (see rfp.CheckListen).
	AuthToken string
	Insecure  bool
	// DoorProcs runs the process with one P per partition while no RFP
	// client is connected (procs.go): a server that only the memcached
	// door uses then has memcached's threads, not the machine's. It
	// changes runtime.GOMAXPROCS, a setting of the whole process: for a
	// server process of its own (cmd/jakiro sets it with --memcached).
	// A GOMAXPROCS set in the environment is kept.
	DoorProcs bool
	// SpareProcs raises runtime.GOMAXPROCS, where needed, to one P more
	// than the partitions and the fabric's goroutines that wait in system
	// calls holding theirs (tcp's pollers: fabric.SyscallWaiters), so the
	// accept loop, handshakes and a poller back from epoll_wait find a P
	// at once rather than when the runtime takes one back (20 µs to
	// 10 ms). On 2 cores over tcp, one partition: 3 Ps rather than 2 took
	// a loop of joins from 445-465 to 388-412 µs p50 and go-ycsb at one
	// thread from 74-77 k to 83-91 k ops/s. A setting of the whole
	// process, as DoorProcs: cmd/jakiro sets it. A GOMAXPROCS set in the
	// environment is kept.
	SpareProcs bool
	// AccessTimes keeps each item's last access time, 4 bytes an item
	// (kv.Config.AccessTimes), for the memcached door's mg l; cmd/jakiro
	// sets it with --memcached.
	AccessTimes bool
}

// Defaults for the flags of cmd/jakiro (see Config).
const (
	DefaultMaxClients   = rfp.DefaultMaxClients
	DefaultReplyTimeout = rfp.DefaultReplyTimeout
	DefaultSpinIdle     = time.Duration(rfp.IdleBeforeSleep)
	DefaultJoinPool     = 8
)

// DefaultPartitions is half the Ps this process has (at least one): a
// partition busy-polls a core while it has work, and the clients on the
// same machine need cores too. A server with cores to itself does best
// with one partition per core it may use.
func DefaultPartitions() int { return max(1, runtime.GOMAXPROCS(0)/2) }

func (c Config) withDefaults() (Config, error) {
	if c.Listen == "" {
		c.Listen = "shm:///tmp/jakiro.sock"
	}
	if c.Partitions == 0 {
		c.Partitions = DefaultPartitions()
	}
	if c.Memory == 0 {
		c.Memory = 1 << 30
	}
	if c.MaxValue == 0 {
		c.MaxValue = 64 << 10
	}
	if c.Slots == 0 {
		c.Slots = rfp.DefaultSlots
	}
	if c.JoinPool == 0 {
		c.JoinPool = DefaultJoinPool
	}
	if c.Fabric.Ready == 0 {
		c.Fabric.Ready = max(c.JoinPool, 0)
	}
	// Below IdleBeforeSleep a partition could block while a client still
	// counts on being polled without ringing (rfp/bells.go).
	c.SpinIdle = max(c.SpinIdle, time.Duration(rfp.IdleBeforeSleepOf(c.Listen)))
	if c.DozeSleep == 0 {
		c.DozeSleep = 20 * time.Microsecond
	}
	if c.Logf == nil {
		c.Logf = func(string, ...any) {}
	}
	if c.Fabric.Logf == nil {
		c.Fabric.Logf = c.Logf
	}
	if err := rfp.CheckListen(c.Listen, c.AuthToken != "", c.Insecure); err != nil {
		return c, fmt.Errorf("server: %w", err)
	}
	if c.MaxValue > rfp.MaxValueLen {
		return c, fmt.Errorf("server: max value %d over the protocol's limit of %d bytes", c.MaxValue, rfp.MaxValueLen)
	}
	if c.Partitions < 1 || c.Partitions > rfp.MaxPartitions {
		return c, fmt.Errorf("server: partitions %d outside 1..%d", c.Partitions, rfp.MaxPartitions)
	}
	return c, nil
}

func (c Config) kvConfig() kv.Config {
	mode := kv.ModeCache
	if c.Store {
		mode = kv.ModeStore
	}
	return kv.Config{Partitions: c.Partitions, Memory: c.Memory, MaxValue: max(c.MaxValue, c.DoorMaxValue), Mode: mode, ApproxLRU: c.ApproxLRU,
		AvgItemSize: c.ItemSize, AccessTimes: c.AccessTimes}
}

// MemorySplit is how Memory divides between the index and the logs (see
// kv.Config.Split), for the operator.
func (c Config) MemorySplit() (index, log int64, err error) {
	c, err = c.withDefaults()
	if err != nil {
		return 0, 0, err
	}
	return c.kvConfig().Split()
}
