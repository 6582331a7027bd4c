package tcp

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jakiro-kv/jakiro/fabric"
)

// envBenchServe makes the test binary a benchmark target (see TestMain).
const envBenchServe = "JAKIRO_TCP_BENCH_SERVE"

// BenchmarkOps measures one-sided ops over loopback against a target in
// another process (as in deployment: the target's NIC goroutines do not
// share the initiator's Ps). Each initiator has its own connection and
// keeps window ops of 32 bytes in flight; Mops counts completed ops of all
// initiators.
func BenchmarkOps(b *testing.B) {
	addr := startTarget(b)
	for _, kind := range []fabric.OpKind{fabric.OpRead, fabric.OpWrite} {
		for _, inits := range []int{1, 2} {
			for _, win := range []int{1, 8, 32} {
				name := fmt.Sprintf("%v/init=%d/win=%d/32B", kind, inits, win)
				b.Run(name, func(b *testing.B) { benchOps(b, addr, kind, inits, win, 32) })
			}
		}
	}
}

// startTarget re-executes the test binary as a target serving regions
// of 1 MiB to every dialer, and returns its address.
func startTarget(b *testing.B) string {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envBenchServe+"=1")
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { stdin.Close(); cmd.Wait() })
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		b.Fatalf("benchmark target: %v", err)
	}
	return strings.TrimSpace(line)
}

// benchServe is the target process: it prints its address and serves
// until stdin closes.
func benchServe() {
	ln, err := fabric.Listen("tcp://127.0.0.1:0", fabric.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println(ln.Addr())
	ctx, cancel := context.WithCancel(context.Background())
	go func() { io.Copy(io.Discard, os.Stdin); cancel() }()
	for {
		s, err := ln.Accept(ctx)
		if err != nil {
			os.Exit(0)
		}
		r, err := s.Alloc(1 << 20)
		if err != nil {
			s.Close()
			continue
		}
		var d [fabric.DescSize]byte
		r.Desc().Put(d[:])
		c, err := s.Establish(ctx, d[:])
		if err != nil {
			continue
		}
		go func() {
			select {
			case <-c.Done():
			case <-ctx.Done():
			}
			c.Close()
		}()
	}
}

func benchOps(b *testing.B, addr string, kind fabric.OpKind, inits, win, size int) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conns := make([]fabric.Conn, inits)
	locals := make([]*fabric.Region, inits)
	remotes := make([]fabric.Desc, inits)
	for i := range conns {
		s, err := fabric.Dial(ctx, addr, fabric.Options{})
		if err != nil {
			b.Fatal(err)
		}
		if locals[i], err = s.Alloc(win * size); err != nil {
			b.Fatal(err)
		}
		if conns[i], err = s.Establish(ctx, nil); err != nil {
			b.Fatal(err)
		}
		defer conns[i].Close()
		if remotes[i], err = fabric.ParseDesc(conns[i].PeerData()); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, inits)
	for i := range conns {
		n := b.N / inits
		if i < b.N%inits {
			n++
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- drive(conns[i], kind, locals[i], remotes[i], win, size, n)
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	close(errs)
	for err := range errs {
		if err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/elapsed.Seconds()/1e6, "Mops")
}

// drive completes n ops on c, keeping up to win in flight: every poll's
// worth of completions is reposted as one batch.
func drive(c fabric.Conn, kind fabric.OpKind, local *fabric.Region, remote fabric.Desc, win, size, n int) error {
	ops := make([]fabric.Op, win)
	for i := range ops {
		ops[i] = fabric.Op{Kind: kind, ID: uint64(i), Local: local, LocalOff: i * size, Len: size, Remote: remote, RemoteOff: uint64(i * size)}
	}
	cs := make([]fabric.Completion, win)
	posted, done, spins := 0, 0, 0
	for done < n {
		if k := min(win-(posted-done), n-posted); k > 0 {
			if err := c.Post(ops[:k]); err != nil {
				return err
			}
			posted += k
		}
		m, err := c.Poll(cs)
		if err != nil {
			return err
		}
		for _, x := range cs[:m] {
			if x.Err != nil {
				return x.Err
			}
		}
		done += m
		if m == 0 {
			// Busy-poll like an RFP client, yielding now and then as
			// fabric.Read does.
			if spins++; spins&15 == 0 {
				runtime.Gosched()
			}
		}
	}
	return nil
}
