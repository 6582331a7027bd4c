package main

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"

	"github.com/jakiro-kv/jakiro/fabric"
	"github.com/jakiro-kv/jakiro/fabric/fabricbench"
)

// runFabric: raw one-sided 32 B READs and WRITEs against a passive target
// process, by initiator count, on shm and on tcp (the software NIC). The
// paper's Fig. 1 contrasts a ConnectX-3's in-bound READs with its
// out-bound WRITEs; here both sides are CPUs, so the figure shows what
// this machine's fabrics offer, not that asymmetry.
func runFabric(e *env) error {
	inits := []int{1, 2, 4, 8}
	if e.Quick {
		inits = []int{1, 2}
	}
	const size, window = 32, 16
	t := &table{Name: "fabric", Cols: []string{"fabric", "op", "initiators", "window", "size", "mops"},
		Settings: []string{e.idleSetting(), fmt.Sprintf("fabric target: passive process (fabricbench), region 1 MiB; ops %d B, window %d per initiator", size, window),
			fmt.Sprintf("per point: %v", e.Duration)}}
	var ss []series
	for _, fab := range []string{"shm", "tcp"} {
		addr, cleanup, err := fabricAddr(fab)
		if err != nil {
			return err
		}
		srv, err := fabricbench.StartServer(addr, 1<<20)
		if err != nil {
			cleanup()
			return fmt.Errorf("%s target: %w", fab, err)
		}
		for _, op := range []fabric.OpKind{fabric.OpRead, fabric.OpWrite} {
			s := series{Name: fmt.Sprintf("%s %v", fab, op)}
			for _, n := range inits {
				r, err := fabricbench.Run(e.Ctx, addr, op, n, window, size, e.Duration)
				if err != nil {
					srv.Stop()
					cleanup()
					return err
				}
				e.logf("  %s %-5v initiators=%d: %.3f Mops", fab, op, n, r.Mops)
				t.add(fab, op, n, window, size, r.Mops)
				s.add(float64(n), r.Mops)
			}
			ss = append(ss, s)
		}
		srv.Stop()
		cleanup()
	}
	png := e.png("fabric")
	if err := linePlot(png, "Raw one-sided 32 B ops (cf. paper Fig. 1)", "initiators", "Mops", ss, true); err != nil {
		return err
	}
	return e.done(t, png)
}

// fabricAddr is a listen address the target can be dialled at: tcp needs
// a known port, as the fabricbench child does not report its own.
func fabricAddr(fab string) (string, func(), error) {
	if fab == "tcp" {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return "", nil, err
		}
		port := l.Addr().(*net.TCPAddr).Port
		l.Close()
		return "tcp://127.0.0.1:" + strconv.Itoa(port), func() {}, nil
	}
	dir, err := os.MkdirTemp("", "jakiro-fabric")
	if err != nil {
		return "", nil, err
	}
	return "shm://" + filepath.Join(dir, "f.sock"), func() { os.RemoveAll(dir) }, nil
}
