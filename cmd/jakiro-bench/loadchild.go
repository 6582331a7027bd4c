package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"
)

// A load child is this binary re-executed to run one loadSpec in its own
// process (its own scheduler and cores' share), printing the result as
// JSON: the fairness experiment's flooding client runs in one.
const envLoad = "JAKIRO_BENCH_LOAD"

// loadChildSpec is what a load child runs: the spec and its keyset.
type loadChildSpec struct {
	Spec loadSpec `json:"spec"`
	Keys int      `json:"keys"`
}

// loadChildResult is what it prints.
type loadChildResult struct {
	Mops    float64   `json:"mops"`
	PerMops []float64 `json:"per_mops"`
	Ops     int64     `json:"ops"`
	CPUNS   int64     `json:"cpu_ns"` // the child's CPU time while measuring
	P50US   float64   `json:"p50_us"`
	P99US   float64   `json:"p99_us"`
	Sched   schedLat  `json:"sched"`
	// The client's counters, per operation: fabric operations, fetches
	// that found nothing yet, doorbell rings.
	FabricOps float64 `json:"fabric_ops_per_op"`
	Retries   float64 `json:"retries_per_op"`
	Rings     float64 `json:"rings_per_op"`
	Err       string  `json:"err,omitempty"`
}

// loadChildIfRequested runs a load child's spec and exits, when this
// process is one.
func loadChildIfRequested() {
	js := os.Getenv(envLoad)
	if js == "" {
		return
	}
	var c loadChildSpec
	if err := json.Unmarshal([]byte(js), &c); err != nil {
		fmt.Fprintln(os.Stderr, "jakiro-bench load child:", err)
		os.Exit(2)
	}
	ks := newKeySet(c.Keys, c.Spec.Sizes)
	c.Spec.Keys = len(ks.keys)
	r, err := runLoad(context.Background(), c.Spec, ks)
	out := loadChildResult{Mops: r.Mops, PerMops: r.PerMops, Ops: r.Ops, CPUNS: int64(r.CPU),
		FabricOps: r.RoundTrips(), Retries: r.Retries(), Rings: r.Counters.RingsPerOp(), Sched: r.Sched}
	if r.Lat != nil {
		out.P50US, out.P99US = r.P(50), r.P(99)
	}
	if err != nil {
		out.Err = err.Error()
	}
	b, _ := json.Marshal(out)
	fmt.Println(string(b))
	os.Exit(0)
}

// loadProc is a running load child.
type loadProc struct {
	cmd  *exec.Cmd
	done chan loadChildResult
}

// startLoad starts a load child with GOMAXPROCS procs.
func startLoad(spec loadSpec, keys, procs int) (*loadProc, error) {
	js, _ := json.Marshal(loadChildSpec{Spec: spec, Keys: keys})
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), envLoad+"="+string(js), fmt.Sprintf("GOMAXPROCS=%d", procs))
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &loadProc{cmd: cmd, done: make(chan loadChildResult, 1)}
	go func() {
		var r loadChildResult
		line, err := bufio.NewReader(out).ReadString('\n')
		if err == nil {
			err = json.Unmarshal([]byte(strings.TrimSpace(line)), &r)
		}
		if err != nil && r.Err == "" {
			r.Err = fmt.Sprintf("load child: %v", err)
		}
		cmd.Wait()
		p.done <- r
	}()
	return p, nil
}

// wait returns the child's result, killing it after d.
func (p *loadProc) wait(d time.Duration) (loadChildResult, error) {
	select {
	case r := <-p.done:
		if r.Err != "" {
			return r, fmt.Errorf("%s", r.Err)
		}
		return r, nil
	case <-time.After(d):
		p.cmd.Process.Kill()
		<-p.done
		return loadChildResult{}, fmt.Errorf("load child did not finish in %v", d)
	}
}
