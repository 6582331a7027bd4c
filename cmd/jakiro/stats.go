package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"text/tabwriter"

	"github.com/urfave/cli/v2"

	"github.com/jakiro-kv/jakiro/client"
	"github.com/jakiro-kv/jakiro/server"
)

func statsCommand() *cli.Command {
	return &cli.Command{
		Name: "stats", Usage: "print the server's statistics: a table per partition with totals, or --json",
		Flags: append(clientFlags(),
			&cli.BoolFlag{Name: "json", Usage: "one JSON document, for scripts"},
			&cli.BoolFlag{Name: "verbose", Aliases: []string{"v"}, Usage: "also print this client's fabric counters on stderr"},
		),
		Action: clientAction(0, 0, "[--json]", func(c *cli.Context, ctx context.Context, cl *client.Client) error {
			var servers []serverStats
			var down []error // servers that did not answer: the others still print
			for _, s := range cl.ServerStats(ctx) {
				if s.Err != nil {
					down = append(down, s.Err)
					continue
				}
				servers = append(servers, serverStats{Addr: s.Addr, Partitions: s.Partitions})
			}
			if len(servers) == 0 {
				return opErr(errors.Join(down...))
			}
			var err error
			if c.Bool("json") {
				err = writeStatsJSON(os.Stdout, servers)
			} else {
				err = writeStatsTable(os.Stdout, servers)
			}
			if err != nil {
				return cli.Exit(err, exitError)
			}
			if c.Bool("verbose") {
				cnt := cl.Counters()
				fmt.Fprintf(os.Stderr, "client: ops=%d fabric-ops/op=%.2f\n", cnt.Ops, cnt.FabricOpsPerOp())
			}
			if len(down) > 0 {
				return cli.Exit(errors.Join(down...), exitError)
			}
			return nil
		}),
	}
}

// serverStats is one server's answer to STATS: a JSON document per
// partition (server.PartitionStats), kept raw so fields this binary does
// not know yet still reach --json.
type serverStats struct {
	Addr       string            `json:"addr"`
	Partitions []json.RawMessage `json:"partitions"`
}

// statsTotal sums a server's partitions.
type statsTotal struct {
	Items     uint64 `json:"items"`
	Bytes     uint64 `json:"bytes"`
	Capacity  uint64 `json:"capacity"`
	Gets      uint64 `json:"gets"`
	Hits      uint64 `json:"hits"`
	Puts      uint64 `json:"puts"`
	Deletes   uint64 `json:"deletes"`
	Evictions uint64 `json:"evictions"`
	Expired   uint64 `json:"expired"`
	Served    uint64 `json:"served"`
	// Clients is the server's connected clients: every partition reports
	// the same server-wide count, so it is their largest, not their sum.
	Clients int `json:"clients"`
}

func (t *statsTotal) add(p server.PartitionStats) {
	k := p.KV
	t.Items += k.Items
	t.Bytes += k.Bytes
	t.Capacity += k.Capacity
	t.Gets += k.Gets
	t.Hits += k.Hits
	t.Puts += k.Puts
	t.Deletes += k.Deletes
	t.Evictions += k.Evictions
	t.Expired += k.Expired
	t.Served += p.Served
	t.Clients = max(t.Clients, p.Clients)
}

func (s serverStats) parse() ([]server.PartitionStats, statsTotal, error) {
	out := make([]server.PartitionStats, len(s.Partitions))
	var t statsTotal
	for i, raw := range s.Partitions {
		if err := json.Unmarshal(raw, &out[i]); err != nil {
			return nil, t, fmt.Errorf("jakiro: %s partition %d: bad stats %q: %w", s.Addr, i, raw, err)
		}
		t.add(out[i])
	}
	return out, t, nil
}

// writeStatsJSON writes {"servers": [{"addr", "partitions": [...], "total"}]}.
func writeStatsJSON(w io.Writer, servers []serverStats) error {
	type section struct {
		serverStats
		Total statsTotal `json:"total"`
	}
	doc := struct {
		Servers []section `json:"servers"`
	}{}
	for _, s := range servers {
		_, t, err := s.parse()
		if err != nil {
			return err
		}
		doc.Servers = append(doc.Servers, section{s, t})
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(doc)
}

// writeStatsTable writes, per server, a line naming it and a table with
// a row per partition and a total row.
func writeStatsTable(w io.Writer, servers []serverStats) error {
	for i, s := range servers {
		parts, t, err := s.parse()
		if err != nil {
			return err
		}
		if i > 0 {
			fmt.Fprintln(w)
		}
		fmt.Fprintf(w, "%s: %d partitions\n", s.Addr, len(parts))
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "partition\titems\tbytes\tcapacity\thit ratio\tgets\tputs\tevictions\texpired\tclients\tserved\t")
		row := func(name string, t statsTotal) {
			fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%d\t%d\t%d\t%d\t%d\t%d\t\n", name, t.Items, bytesText(t.Bytes), bytesText(t.Capacity),
				hitRatio(t.Hits, t.Gets), t.Gets, t.Puts, t.Evictions, t.Expired, t.Clients, t.Served)
		}
		for _, p := range parts {
			var one statsTotal
			one.add(p)
			row(strconv.Itoa(p.Partition), one)
		}
		row("total", t)
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	return nil
}

func hitRatio(hits, gets uint64) string {
	if gets == 0 {
		return "-"
	}
	return strconv.FormatFloat(100*float64(hits)/float64(gets), 'f', 1, 64) + "%"
}

// bytesText: 812 B, 1.5 KiB, 512 MiB.
func bytesText(n uint64) string {
	const units = "KMGTPE"
	if n < 1024 {
		return strconv.FormatUint(n, 10) + " B"
	}
	v, u := float64(n)/1024, 0
	for v >= 1024 && u < len(units)-1 {
		v /= 1024
		u++
	}
	prec := 1
	if v == float64(uint64(v)) {
		prec = 0
	}
	return strconv.FormatFloat(v, 'f', prec, 64) + " " + units[u:u+1] + "iB"
}
