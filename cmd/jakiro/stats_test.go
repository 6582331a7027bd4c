package main

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestBytesText(t *testing.T) {
	for n, want := range map[uint64]string{0: "0 B", 1023: "1023 B", 1024: "1 KiB", 1536: "1.5 KiB", 512 << 20: "512 MiB", 3 << 40: "3 TiB", 1<<30 + 1<<29: "1.5 GiB"} {
		if got := bytesText(n); got != want {
			t.Errorf("bytesText(%d) = %q, want %q", n, got, want)
		}
	}
}

// TestStatsSections: one section per server (the layout `--addr a,b,c`
// will print), totals summed per server, clients the largest count.
func TestStatsSections(t *testing.T) {
	part := func(id, clients int, items, gets, hits uint64) json.RawMessage {
		b, _ := json.Marshal(map[string]any{"partition": id, "clients": clients, "served": 10, "not_known_yet": id + 1, "kv": map[string]uint64{"Items": items, "Bytes": 100 * items, "Gets": gets, "Hits": hits}})
		return b
	}
	servers := []serverStats{
		{Addr: "shm:///a.sock", Partitions: []json.RawMessage{part(0, 2, 1, 4, 1), part(1, 2, 3, 0, 0)}},
		{Addr: "tcp://127.0.0.1:7700", Partitions: []json.RawMessage{part(0, 5, 7, 2, 2)}},
	}
	var b strings.Builder
	if err := writeStatsTable(&b, servers); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	sections := strings.Split(out, "\n\n")
	if len(sections) != 2 || !strings.HasPrefix(sections[0], "shm:///a.sock: 2 partitions\n") || !strings.HasPrefix(sections[1], "tcp://127.0.0.1:7700: 1 partitions\n") {
		t.Fatalf("want a section per server:\n%s", out)
	}
	lines := strings.Split(sections[0], "\n")
	for i, want := range [][]string{
		2: {"0", "1", "100", "B", "0", "B", "25.0%", "4", "0", "0", "0", "2", "10"},
		3: {"1", "3", "300", "B", "0", "B", "-", "0", "0", "0", "0", "2", "10"},
		4: {"total", "4", "400", "B", "0", "B", "25.0%", "4", "0", "0", "0", "2", "20"},
	} {
		if want == nil {
			continue
		}
		if got := strings.Fields(lines[i]); strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("row %d = %q, want %q\n%s", i, got, want, out)
		}
	}

	b.Reset()
	if err := writeStatsJSON(&b, servers); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Servers []struct {
			Addr       string            `json:"addr"`
			Partitions []json.RawMessage `json:"partitions"`
			Total      statsTotal        `json:"total"`
		} `json:"servers"`
	}
	if err := json.Unmarshal([]byte(b.String()), &doc); err != nil {
		t.Fatalf("--json: %v\n%s", err, b.String())
	}
	if len(doc.Servers) != 2 || doc.Servers[0].Total.Items != 4 || doc.Servers[0].Total.Clients != 2 || doc.Servers[1].Total.Served != 10 {
		t.Errorf("--json totals:\n%s", b.String())
	}
	var p1 map[string]any
	if err := json.Unmarshal(doc.Servers[0].Partitions[1], &p1); err != nil || p1["not_known_yet"] != 2.0 {
		t.Errorf("--json passes on fields of the server's document this binary does not know (%v):\n%s", err, b.String())
	}

	bad := []serverStats{{Addr: "x", Partitions: []json.RawMessage{json.RawMessage(`{"partition":`)}}}
	if err := writeStatsTable(&b, bad); err == nil || !strings.Contains(err.Error(), "bad stats") {
		t.Errorf("a partition's malformed stats: err %v", err)
	}
}
