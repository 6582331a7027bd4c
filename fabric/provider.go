package fabric

import (
	"context"
	"fmt"
	"net/url"
	"sort"
	"sync"
	"time"
)

// Options tune a connection or listener. Zero values take defaults.
type Options struct {
	// QueueDepth bounds the operations outstanding on a connection
	// (default 256).
	QueueDepth int
	// DomainSize bounds the bytes of regions one connection's domain may
	// hold (default 1 GiB; providers that reserve it lazily only pay for
	// what is touched). A shm listener also reaches (and maps) at most
	// this much of each dialer's domain.
	DomainSize int64
	// Device names the RDMA device (verbs only; default: the one rdma_cm
	// resolves for the address).
	Device string
	// Doorbells is how many doorbells a listener offers its peers (see
	// Doorbells); 0 for none. Providers without them ignore it.
	Doorbells int
	// SendTimeout bounds how long a peer may take none of the bytes this
	// side has to send it (requests or responses): past it the connection
	// ends with ErrPeerGone, so a peer that stops reading cannot hold a
	// sender (default 1s). Providers whose hardware bounds sends itself
	// (verbs) ignore it.
	SendTimeout time.Duration
	// Logf receives what a listener turned away (handshake floods,
	// timeouts), rate-limited; nil drops it.
	Logf func(format string, args ...any)
	// Ready is how many connections' resources a listener prepares
	// before anyone dials, refilled in the background, so that a join
	// does not wait for them (shm: sealed, mapped domains; rdma: event
	// channels, PDs, CQs and QPs, made at the lowest CPU priority); 0: none.
	// Each prepared resource goes to one connection and never back, so
	// nothing passes between clients. Providers with nothing to prepare
	// ignore it; those that prepare report the pool (ReadyCounter).
	Ready int
	// BorrowDomain has a dialer use a domain its listener made for it
	// instead of making its own (shm: a sealed memfd the listener's
	// Ready pool keeps made and mapped, given to this one connection and
	// never to another): its join makes no memory, and its regions must
	// fit in the listener's DomainSize, which is all a listener reaches
	// of a dialer's domain anyway. Regions are allocated once the
	// connection is established. Providers without such domains ignore it.
	BorrowDomain bool
	// OnHello, if set, is called by a listener as soon as a dialer's
	// hello has arrived, before the acceptor's work on it, so the
	// application can wake what the new connection will need (its
	// partitions) while the handshake completes. It must not block.
	OnHello func()
	// OnSetup, if set, is offered each handshaken setup on the
	// goroutine that read its hello (shm: often the listener's accept
	// loop; tcp: the handshake's own) before it is queued for Accept: a
	// setup it takes (returns true) never reaches Accept, and no thread
	// is woken between the dialer's hello and the application's answer.
	// It must not block: the setup's Establish, with the ctx it is given
	// (bounded), is all it may wait for. Providers that hand setups over
	// otherwise ignore it.
	OnSetup func(ctx context.Context, s Setup) bool
}

// DefaultSendTimeout is Options.SendTimeout's default.
const DefaultSendTimeout = time.Second

// MaxDoorbells bounds Options.Doorbells.
const MaxDoorbells = 256

// WithDefaults fills zero fields.
func (o Options) WithDefaults() Options {
	if o.QueueDepth <= 0 {
		o.QueueDepth = 256
	}
	if o.DomainSize <= 0 {
		o.DomainSize = 1 << 30
	}
	if o.SendTimeout <= 0 {
		o.SendTimeout = DefaultSendTimeout
	}
	return o
}

// Provider implements the fabric for one URL scheme.
type Provider interface {
	Listen(u *url.URL, o Options) (Listener, error)
	Dial(ctx context.Context, u *url.URL, o Options) (Setup, error)
}

var (
	providersMu sync.RWMutex
	providers   = map[string]Provider{}
)

// Register makes a provider available under a URL scheme ("shm", "tcp",
// "rdma"). Providers call it from init.
func Register(scheme string, p Provider) {
	providersMu.Lock()
	defer providersMu.Unlock()
	if _, dup := providers[scheme]; dup {
		panic("fabric: provider registered twice: " + scheme)
	}
	providers[scheme] = p
}

// Schemes lists the registered URL schemes.
func Schemes() []string {
	providersMu.RLock()
	defer providersMu.RUnlock()
	s := make([]string, 0, len(providers))
	for k := range providers {
		s = append(s, k)
	}
	sort.Strings(s)
	return s
}

func lookup(addr string) (*url.URL, Provider, error) {
	u, err := url.Parse(addr)
	if err != nil {
		return nil, nil, fmt.Errorf("fabric: bad address %q: %w", addr, err)
	}
	providersMu.RLock()
	p := providers[u.Scheme]
	providersMu.RUnlock()
	if p == nil {
		return nil, nil, fmt.Errorf("fabric: address %q: %w", addr, NoProviderError(u.Scheme))
	}
	return u, p, nil
}

// Listen listens on a URL such as shm:///tmp/jakiro.sock,
// tcp://127.0.0.1:7700 or rdma://192.168.1.5:7700.
func Listen(addr string, o Options) (Listener, error) {
	u, p, err := lookup(addr)
	if err != nil {
		return nil, err
	}
	return p.Listen(u, o.WithDefaults())
}

// Dial starts a connection to a listener's URL.
func Dial(ctx context.Context, addr string, o Options) (Setup, error) {
	u, p, err := lookup(addr)
	if err != nil {
		return nil, err
	}
	return p.Dial(ctx, u, o.WithDefaults())
}
