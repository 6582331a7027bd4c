package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"

	"github.com/jakiro-kv/jakiro/client"
)

// windowMax is the deepest window the window experiment asks for; its
// servers get that many ring slots, since a client asking for more than
// the server's slots (beyond a small cap) is granted only the server's.
const windowMax = 64

// runWindow: fabric operations per GET and throughput against the window
// (requests per client.Batch; 1 = synchronous Gets), rfp and reply, on shm
// and tcp. One client connection, 100% GET of 32 B values over the
// preloaded keys (uniform). The fabric operations are the client's
// WRITEs + READs per finished op (its counters) and the server's reply
// WRITEs per request served (its STATS, before and after). Each fabric
// has its own server process; its repetitions interleave every mode and
// window.
func runWindow(e *env) error {
	windows := []int{1, 2, 4, 8, 16, 32, windowMax}
	if e.Quick {
		windows = []int{1, 4, 16, windowMax}
	}
	fabrics := []string{"shm", "tcp"}
	if e.Addr != "" {
		fabrics = []string{addrFabric(e.Addr)}
	}
	modes := []client.Mode{client.ModeRFP, client.ModeReply}
	ks := newKeySet(e.Keys, sizeDist{Fixed: 32})
	o := serverOpts{Slots: windowMax}
	settings := e.settings(o, "workload: 100% GET, uniform over the preloaded keys, 32 B values, RFS auto; one client connection (client-procs 1: one lane)",
		"window: requests per client.Batch, run back to back (window 1: synchronous Gets); the client asks the server for rings that deep",
		"fabric_ops_per_get: every fabric operation per GET: the client's WRITEs and READs (its counters, per finished op) and the server's reply WRITEs (server_writes_per_get: the server's reply_writes per request served, from STATS before and after the point)",
		fmt.Sprintf("each point: median of %d interleaved repetitions (min, max beside); fabric_ops_per_get, writes_per_get, reads_per_get: medians over them; the other columns: the median repetition's", e.reps()))
	for i, s := range settings {
		if strings.HasPrefix(s, "fabric: ") {
			settings[i] = "fabrics: " + strings.Join(fabrics, ", ") + " (shm: cross-process shared memory; tcp: tcp://127.0.0.1, loopback); each fabric its own server process"
		}
	}
	t := &table{Name: "window", Cols: append(append([]string{"fabric", "mode", "window"}, repCols...),
		append([]string{"ops_per_sec", "fabric_ops_per_get", "writes_per_get", "reads_per_get", "server_writes_per_get"}, loadCols...)...), Settings: settings}
	type key struct {
		fab string
		m   client.Mode
		w   int
	}
	runs := map[key][]loadResult{}
	srvWrites := map[key][]float64{} // the server's reply WRITEs per GET
	for _, fab := range fabrics {
		o := o
		if fab == "tcp" && e.Addr == "" {
			o.Listen = loopbackTCP
		}
		err := e.server(o, ks, func(addr string) error {
			sc, err := client.Dial(e.Ctx, addr)
			if err != nil {
				return err
			}
			defer sc.Close()
			for rep := 0; rep < e.reps(); rep++ {
				for _, m := range modes {
					for _, w := range windows {
						s0, err := replyWrites(e, sc)
						if err != nil {
							return err
						}
						r, err := e.point(fmt.Sprintf("%s %s window=%d rep %d", fab, m, w, rep+1),
							loadSpec{Addr: addr, Mode: m, Clients: 1, Window: w, GetRatio: 1}, ks)
						if err != nil {
							return err
						}
						s1, err := replyWrites(e, sc)
						if err != nil {
							return err
						}
						k := key{fab, m, w}
						runs[k] = append(runs[k], r)
						srvWrites[k] = append(srvWrites[k], s1.perServed(s0))
					}
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	var trips, tput []series
	for _, fab := range fabrics {
		for _, m := range modes {
			name := fab + " " + m.String()
			st, sm := series{Name: name}, series{Name: name}
			for _, w := range windows {
				rs := runs[key{fab, m, w}]
				r, sp := medianRun(rs)
				writes := medianOf(rs, func(r loadResult) float64 { return perOp(r.Counters.Writes, r.Counters.Ops) })
				reads := medianOf(rs, func(r loadResult) float64 { return perOp(r.Counters.Reads, r.Counters.Ops) })
				srv := spreadOf(srvWrites[key{fab, m, w}]).Med
				fops := medianOf(rs, loadResult.RoundTrips) + srv
				t.add(append(append(append([]any{fab, m, w}, repVals(sp)...), sp.Med*1e6, fops, writes, reads, srv), loadVals(r)...)...)
				st.add(float64(w), fops)
				sm.addSpread(float64(w), sp)
				e.logf("  %-3s %-5s window=%2d: %s Mops, %.3f fabric ops/GET (%.3f WRITEs + %.3f READs + %.3f server reply WRITEs), client %.2f µs/op",
					fab, m, w, sp, fops, writes, reads, srv, r.CPUPerOp())
			}
			trips, tput = append(trips, st), append(tput, sm)
		}
	}
	png := e.png("window")
	if err := windowPlot(png, windows, trips, tput); err != nil {
		return err
	}
	return e.done(t, png)
}

// addrFabric names the fabric of a --addr (its URL scheme).
func addrFabric(addr string) string {
	if s, _, ok := strings.Cut(addr, "://"); ok {
		return s
	}
	return addr
}

func perOp(n, ops uint64) float64 {
	if ops == 0 {
		return 0
	}
	return float64(n) / float64(ops)
}

// windowPlot draws the window figure: fabric operations per GET (left)
// and throughput with each point's min–max (right) against the window,
// on a log x axis ticked at each window.
func windowPlot(path string, windows []int, trips, tput []series) error {
	left := windowPanel("Fabric operations per GET (client WRITEs + READs + server reply WRITEs)", "fabric ops / GET", windows, trips)
	right := windowPanel("Throughput, 1 connection, 32 B, 100% GET (median, min–max)", "Mops", windows, tput)
	for _, p := range []*plot.Plot{left, right} {
		if p == nil {
			return fmt.Errorf("window plot: no points")
		}
	}
	const w, h = 13 * vg.Inch, 4.5 * vg.Inch
	img := vgimg.New(w, h)
	dc := draw.New(img)
	tiles := draw.Tiles{Rows: 1, Cols: 2, PadX: vg.Millimeter * 6, PadTop: vg.Millimeter * 2, PadBottom: vg.Millimeter * 2,
		PadLeft: vg.Millimeter * 2, PadRight: vg.Millimeter * 2}
	cs := plot.Align([][]*plot.Plot{{left, right}}, tiles, dc)
	left.Draw(cs[0][0])
	right.Draw(cs[0][1])
	return savePNG(img, path)
}

// windowPanel is one panel: a line per fabric and mode, with min–max bars
// where the series has them.
func windowPanel(title, yl string, windows []int, ss []series) *plot.Plot {
	if len(ss) == 0 {
		return nil
	}
	p := newPlot(title, "window (requests per batch)", yl)
	p.X.Scale = plot.LogScale{}
	var ticks []plot.Tick
	for _, w := range windows {
		ticks = append(ticks, plot.Tick{Value: float64(w), Label: strconv.Itoa(w)})
	}
	p.X.Tick.Marker = plot.ConstantTicks(ticks)
	p.X.Min, p.X.Max = float64(windows[0])/1.2, float64(windows[len(windows)-1])*1.2
	p.Y.Min = 0
	headroom(p, ss)
	for i, s := range ss {
		l, pts, err := plotter.NewLinePoints(s.xys())
		if err != nil {
			continue
		}
		l.Color, pts.Color, pts.Shape = plotutil.Color(i), plotutil.Color(i), plotutil.Shape(i)
		l.Dashes = plotutil.Dashes(i / 2) // shm solid, tcp dashed
		p.Add(l, pts)
		p.Legend.Add(s.Name, l, pts)
		if len(s.Lo) == len(s.X) {
			p.Add(rangeBars{X: s.X, Lo: s.Lo, Hi: s.Hi, Color: plotutil.Color(i)})
		}
	}
	return p
}

func savePNG(img *vgimg.Canvas, path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// serverCounts are the server's reply WRITEs and requests served, summed
// over its partitions.
type serverCounts struct{ writes, served uint64 }

func (s serverCounts) perServed(before serverCounts) float64 {
	if s.served <= before.served {
		return 0
	}
	return float64(s.writes-before.writes) / float64(s.served-before.served)
}

func replyWrites(e *env, c *client.Client) (serverCounts, error) {
	parts, err := c.Stats(e.Ctx)
	if err != nil {
		return serverCounts{}, err
	}
	var sc serverCounts
	for _, b := range parts {
		var ps struct {
			Served      uint64 `json:"served"`
			ReplyWrites uint64 `json:"reply_writes"`
		}
		if err := json.Unmarshal(b, &ps); err != nil {
			return sc, fmt.Errorf("server stats: %w", err)
		}
		sc.writes += ps.ReplyWrites
		sc.served += ps.Served
	}
	return sc, nil
}
