package client

import (
	"fmt"
	"slices"
	"strings"
	"unsafe"

	"github.com/cespare/xxhash/v2"
	"github.com/dgryski/go-rendezvous"
)

// SplitAddrs reads a comma-separated list of fabric URLs
// ("tcp://a:7000,shm:///tmp/b.sock"), trimming spaces. An empty entry or
// one listed twice is an error.
func SplitAddrs(list string) ([]string, error) {
	var out []string
	for a := range strings.SplitSeq(list, ",") {
		a = strings.TrimSpace(a)
		if a == "" {
			return nil, fmt.Errorf("jakiro: empty address in %q", list)
		}
		if slices.Contains(out, a) {
			return nil, fmt.Errorf("jakiro: address %s listed twice", a)
		}
		out = append(out, a)
	}
	return out, nil
}

// router maps keys to servers by rendezvous (highest random weight)
// hashing: a key goes to the server whose hash with it is largest, so
// adding a server moves only the keys it wins, about 1/N, and the list's
// order does not matter. Servers are named by their address as written:
// clients that share data must spell the addresses alike.
type router struct {
	rdv   *rendezvous.Rendezvous
	index map[string]int
}

func newRouter(addrs []string) *router {
	r := &router{rdv: rendezvous.New(addrs, xxhash.Sum64String), index: make(map[string]int, len(addrs))}
	for i, a := range addrs {
		r.index[a] = i
	}
	return r
}

// pick is the index of key's server.
func (r *router) pick(key []byte) int {
	// The lookup only hashes the key: view it as a string without a copy.
	return r.index[r.rdv.Lookup(unsafe.String(unsafe.SliceData(key), len(key)))]
}
