package ycsb

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/jakiro-kv/jakiro/client"
	"github.com/jakiro-kv/jakiro/server"
	"github.com/jakiro-kv/jakiro/server/servertest"
)

// go-ycsb loads and runs over three server processes named in one
// jakiro.addr list, with no errors, one operation at a time and batched;
// every server ends up holding records.
func TestRunOverThreeServers(t *testing.T) {
	var addrs []string
	for range 3 {
		addrs = append(addrs, servertest.Start(t, "tcp://127.0.0.1:0").Addr)
	}
	list := strings.Join(addrs, ", ")
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	base := func(kv ...string) []string {
		return append([]string{PropAddr, list, "recordcount", "600", "operationcount", "1200", "threadcount", "1",
			"fieldcount", "1", "fieldlength", "32", "readproportion", "0.9", "updateproportion", "0.1"}, kv...)
	}
	r, err := Run(ctx, RunConfig{DB: "jakiro", Props: props(base()...), Load: true})
	if err != nil || r.Ops != 600 || r.Errors != 0 {
		t.Fatalf("load: %+v %v (%v)", r, err, r.FirstError)
	}
	for _, batch := range []string{"1", "8"} {
		r, err = Run(ctx, RunConfig{DB: "jakiro", Props: props(base("batch.size", batch)...), Duration: 60 * time.Second})
		if err != nil || r.Ops != 1200 || r.Errors != 0 {
			t.Fatalf("run batch.size=%s: %+v %v (%v)", batch, r, err, r.FirstError)
		}
	}
	c, err := client.Dial(ctx, list)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, s := range c.ServerStats(ctx) {
		var st server.PartitionStats
		if s.Err == nil && len(s.Partitions) > 0 {
			s.Err = json.Unmarshal(s.Partitions[0], &st)
		}
		if s.Err != nil || st.KV.Items == 0 {
			t.Errorf("server %s after the load: %s %v", s.Addr, s.Partitions, s.Err)
		}
	}
}
