package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/jakiro-kv/jakiro/client"
)

// stress: clients in several processes PUT and GET a few hot keys at once
// with self-validating values (internal/stressval). Every GET is checked:
// invalid (torn, foreign or corrupt) and stale (a writer's version going
// backwards for one reader) values fail the run, as do errors.
func stressCommand() *cli.Command {
	return &cli.Command{
		Name:  "stress",
		Usage: "hot keys PUT and GET from several processes; exit 1 on any invalid or stale value",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "addr", Required: true, Usage: "server URL (shm://, tcp://, rdma://)"},
			&cli.DurationFlag{Name: "duration", Value: 5 * time.Second, Usage: "how long to run (the bound when --ops is set)"},
			&cli.Uint64Flag{Name: "ops", Usage: "stop once this many operations are done in all (0: run for --duration)"},
			&cli.StringFlag{Name: "mode", Value: "all", Usage: "rfp, reply, hybrid, or all (processes take the modes in turn)"},
			&cli.IntFlag{Name: "procs", Value: 3, Usage: "client processes"},
			&cli.IntFlag{Name: "workers", Value: 2, Usage: "goroutines per process sharing its client, each a writer and reader"},
			&cli.IntFlag{Name: "keys", Value: 16, Usage: "hot keys"},
			&cli.IntFlag{Name: "put-pct", Value: 30, Usage: "percent of operations that are PUTs"},
			&cli.IntFlag{Name: "batch", Value: 16, Usage: "operations per pipelined batch (1..64)"},
			&cli.IntFlag{Name: "window", Usage: "requests in flight per partition (0: the server's ring slots; more asks for deeper rings)"},
			&cli.Uint64Flag{Name: "max-errors", Usage: "errors (other than not found) tolerated before the run fails"},
			&cli.StringFlag{Name: "out", Usage: "also write DIR/stress.csv with the machine block"},
		},
		Action: runStress,
	}
}

// envStressChild marks a stress client process; it holds its spec.
const envStressChild = "JAKIRO_STRESS_CHILD"

// stressChildIfRequested runs this process as one stress client when the
// parent started it so, and never returns then.
func stressChildIfRequested() {
	js := os.Getenv(envStressChild)
	if js == "" {
		return
	}
	var spec stressChildSpec
	if err := json.Unmarshal([]byte(js), &spec); err != nil {
		fmt.Fprintln(os.Stderr, "stress child:", err)
		os.Exit(2)
	}
	n, err := runStressProcess(context.Background(), spec, os.Stderr)
	out, _ := json.Marshal(stressChildResult{Counts: n, Err: errString(err)})
	fmt.Println(string(out))
	os.Exit(0)
}

type stressChildResult struct {
	Counts stressCounts `json:"counts"`
	Err    string       `json:"err,omitempty"`
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func runStress(c *cli.Context) error {
	addr := c.String("addr")
	modes, err := stressModes(c.String("mode"))
	if err != nil {
		return err
	}
	procs, workers, batch := c.Int("procs"), c.Int("workers"), c.Int("batch")
	if procs < 1 || workers < 1 || batch < 1 || batch > 64 || c.Int("keys") < 1 {
		return errors.New("stress: --procs, --workers, --keys must be positive and --batch 1..64")
	}
	// Learn the server's max value (and that it is there) before forking.
	dctx, cancel := context.WithTimeout(c.Context, 30*time.Second)
	probe, err := client.Dial(dctx, addr)
	cancel()
	if err != nil {
		return err
	}
	maxValue, partitions := probe.MaxValue(), probe.Partitions()
	probe.Close()
	dur, ops := c.Duration("duration"), c.Uint64("ops")
	fmt.Printf("stress: %s, %d processes × %d workers, %d hot keys, %d%% PUT, batches of %d, modes %s, values 1 B..%d B, ",
		addr, procs, workers, c.Int("keys"), c.Int("put-pct"), batch, strings.Join(modes, "/"), maxValue)
	if ops > 0 {
		fmt.Printf("%d ops (at most %v)\n", ops, dur)
	} else {
		fmt.Printf("%v\n", dur)
	}
	run := strconv.FormatInt(time.Now().UnixNano(), 36)
	byMode := map[string]*stressCounts{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	var failures []string
	start := time.Now()
	for p := range procs {
		spec := stressChildSpec{Addr: addr, Run: run, Mode: modes[p%len(modes)], Proc: p, Workers: workers,
			Writers: procs * workers, Keys: c.Int("keys"), PutPct: c.Int("put-pct"), Batch: batch, Window: c.Int("window"), Duration: dur}
		if ops > 0 {
			spec.Ops = (ops + uint64(procs) - 1) / uint64(procs)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := runStressChild(c.Context, spec)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				failures = append(failures, fmt.Sprintf("process %d (%s): %v", spec.Proc, spec.Mode, err))
			}
			if byMode[spec.Mode] == nil {
				byMode[spec.Mode] = &stressCounts{}
			}
			byMode[spec.Mode].add(res)
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	return stressReport(c, modes, byMode, failures, elapsed, maxValue, partitions)
}

// runStressChild runs one client process and reads its counts. It is
// killed if it outlives the run by a minute.
func runStressChild(ctx context.Context, spec stressChildSpec) (stressCounts, error) {
	js, _ := json.Marshal(spec)
	cctx, cancel := context.WithTimeout(ctx, spec.Duration+2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(cctx, os.Args[0])
	cmd.Env = append(os.Environ(), envStressChild+"="+string(js))
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return stressCounts{}, err
	}
	if err := cmd.Start(); err != nil {
		return stressCounts{}, err
	}
	var res stressChildResult
	var line string
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		line = sc.Text()
	}
	werr := cmd.Wait()
	if err := json.Unmarshal([]byte(line), &res); err != nil {
		return stressCounts{}, fmt.Errorf("no result (exit: %v)", werr)
	}
	if res.Err != "" {
		return res.Counts, errors.New(res.Err)
	}
	return res.Counts, werr
}

func stressReport(c *cli.Context, modes []string, byMode map[string]*stressCounts, failures []string, elapsed time.Duration, maxValue, partitions int) error {
	t := &table{Name: "stress", Cols: []string{"mode", "procs", "ops", "gets", "puts", "hits", "short_values",
		"invalid", "stale", "errors", "seconds", "mops", "fabric_ops_per_op", "replied"},
		Settings: []string{fmt.Sprintf("addr: %s", c.String("addr")),
			fmt.Sprintf("stress: procs=%d workers=%d keys=%d put_pct=%d batch=%d window=%d values=1..%dB server_partitions=%d",
				c.Int("procs"), c.Int("workers"), c.Int("keys"), c.Int("put-pct"), c.Int("batch"), c.Int("window"), maxValue, partitions)}}
	var all stressCounts
	fmt.Printf("%-7s %12s %12s %12s %8s %8s %8s %8s\n", "mode", "ops", "gets", "puts", "Mops", "invalid", "stale", "errors")
	for _, m := range modes {
		n := byMode[m]
		if n == nil {
			continue
		}
		all.add(*n)
		mops := float64(n.Ops) / elapsed.Seconds() / 1e6
		fmt.Printf("%-7s %12d %12d %12d %8.3f %8d %8d %8d\n", m, n.Ops, n.Gets, n.Puts, mops, n.Invalid, n.Stale, n.Errors)
		fabric := 0.0
		if n.Ops > 0 {
			fabric = float64(n.Fabric) / float64(n.Ops)
		}
		procs := 0
		for p := range c.Int("procs") {
			if modes[p%len(modes)] == m {
				procs++
			}
		}
		t.add(m, procs, n.Ops, n.Gets, n.Puts, n.Hits, n.Short, n.Invalid, n.Stale, n.Errors, elapsed.Seconds(), mops, fabric, n.Replied)
	}
	fmt.Printf("%-7s %12d %12d %12d %8.3f %8d %8d %8d  (%v, %d hits, %d short values)\n", "total", all.Ops, all.Gets, all.Puts,
		float64(all.Ops)/elapsed.Seconds()/1e6, all.Invalid, all.Stale, all.Errors, elapsed.Round(time.Millisecond), all.Hits, all.Short)
	if dir := c.String("out"); dir != "" {
		path, err := t.write(dir, getMachineInfo())
		if err != nil {
			return err
		}
		fmt.Println("stress: wrote", path)
	}
	for _, f := range failures {
		fmt.Fprintln(os.Stderr, "stress:", f)
	}
	switch {
	case all.Invalid > 0 || all.Stale > 0:
		return cli.Exit(fmt.Sprintf("stress: FAIL: %d invalid, %d stale values", all.Invalid, all.Stale), 1)
	case all.Errors > c.Uint64("max-errors"):
		return cli.Exit(fmt.Sprintf("stress: FAIL: %d errors", all.Errors), 1)
	case len(failures) > 0:
		return cli.Exit("stress: FAIL: client processes failed", 1)
	case all.Ops == 0 || all.Hits == 0:
		return cli.Exit("stress: FAIL: no operation or no value read: nothing was checked", 1)
	}
	fmt.Println("stress: PASS")
	return nil
}
