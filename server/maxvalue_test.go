package server_test

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/jakiro-kv/jakiro/client"
	"github.com/jakiro-kv/jakiro/rfp"
	"github.com/jakiro-kv/jakiro/server"
)

// TestProtocolMaxValue: a server started with the protocol's largest
// value (1 MiB, what `--max-value 1MiB` asks for) serves a value of
// exactly that length in every mode, refuses one byte more with
// ErrTooLarge, and a larger --max-value is refused at start.
func TestProtocolMaxValue(t *testing.T) {
	if rfp.MaxValueLen != 1<<20 {
		t.Fatalf("rfp.MaxValueLen = %d, want 1 MiB (memcached's default item limit)", rfp.MaxValueLen)
	}
	for _, fab := range e2eFabrics() {
		t.Run(fab, func(t *testing.T) {
			srv := startServer(t, e2eListen(t, fab), "JAKIRO_E2E_MAXVALUE="+strconv.Itoa(rfp.MaxValueLen))
			for _, m := range modes {
				c := dialT(t, srv.Addr, client.WithMode(m))
				if c.MaxValue() != rfp.MaxValueLen {
					t.Fatalf("client sees max value %d, want %d", c.MaxValue(), rfp.MaxValueLen)
				}
				ctx := ctxT(t)
				key := fmt.Sprintf("max:%s", m)
				want := value(key, rfp.MaxValueLen)
				if err := c.Put(ctx, []byte(key), want, 0); err != nil {
					t.Fatalf("%s: put of %d B: %v", m, len(want), err)
				}
				got, err := c.Get(ctx, []byte(key))
				if err != nil || !bytes.Equal(got, want) {
					t.Fatalf("%s: get of %d B: %d B back, %v", m, len(want), len(got), err)
				}
				if err := c.Put(ctx, []byte(key), make([]byte, rfp.MaxValueLen+1), 0); !errors.Is(err, client.ErrTooLarge) {
					t.Fatalf("%s: put of 1 MiB + 1: %v, want ErrTooLarge", m, err)
				}
			}
		})
	}
	_, err := server.New(server.Config{Listen: "shm://" + filepath.Join(t.TempDir(), "m.sock"), Partitions: 1,
		Memory: 16 << 20, MaxValue: rfp.MaxValueLen + 1})
	if err == nil || !strings.Contains(err.Error(), "over the protocol's limit") {
		t.Fatalf("server with max value 1 MiB + 1: %v, want a refusal naming the protocol's limit", err)
	}
}
