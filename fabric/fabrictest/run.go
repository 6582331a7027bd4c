package fabrictest

import (
	"testing"
)

// Run runs the conformance suite as subtests of t. newAddr returns a fresh
// listen URL for the provider under test each time it is called.
func Run(t *testing.T, newAddr func(t *testing.T) string) {
	cases := []struct {
		name string
		fn   func(*testing.T, func(*testing.T) string)
	}{
		{"ReadWrite", testReadWrite},
		{"Batch", testBatch},
		{"QueueDepth", testQueueDepth},
		{"Regions", testRegions},
		{"RemoteAccess", testRemoteAccess},
		{"LocalAccess", testLocalAccess},
		{"PrivateData", testPrivateData},
		{"Concurrent", testConcurrent},
		{"PeerClose", testPeerClose},
		{"CrossProcess", testCrossProcess},
		{"Doorbells", testDoorbells},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { c.fn(t, newAddr) })
	}
}
