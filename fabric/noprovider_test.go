package fabric_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/jakiro-kv/jakiro/fabric"
)

// This package links no provider: Dial and Listen say which import fixes
// that.
func TestNoProviderSaysWhichImport(t *testing.T) {
	_, err := fabric.Dial(context.Background(), "shm:///tmp/x.sock", fabric.Options{})
	if !errors.Is(err, fabric.ErrNoProvider) || !strings.Contains(err.Error(), `forgotten import? add `+"`"+`import _ "github.com/jakiro-kv/jakiro/fabric/providers"`) {
		t.Fatalf("Dial = %v", err)
	}
	_, err = fabric.Listen("tcp://127.0.0.1:0", fabric.Options{})
	if !errors.Is(err, fabric.ErrNoProvider) || !strings.Contains(err.Error(), "fabric/providers") {
		t.Fatalf("Listen = %v", err)
	}
	if err := fabric.NoProviderError("rdma"); !strings.Contains(err.Error(), "-tags rdma") {
		t.Fatalf("rdma: %v", err)
	}
	t.Log(fabric.NoProviderError("shm"))
}
