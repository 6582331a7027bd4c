package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jakiro-kv/jakiro/client"
)

// A join child is this binary re-executed to join a server once: it
// prints "READY", waits for the burst (EOF on the pipe it inherits as fd
// 3, closed by the parent for every child at once), then dials, GETs one
// key, closes and prints a joinChildResult as JSON.
const envJoin = "JAKIRO_BENCH_JOIN"

// joinChildSpec is what a join child does.
type joinChildSpec struct {
	System string `json:"system"` // "jakiro" (an RFP client at its defaults) or "memcached" (ascii, connect + get + close)
	Addr   string `json:"addr"`   // fabric URL, or host:port for memcached
	Key    string `json:"key"`
	Size   int    `json:"size"` // the value's expected length
}

// joinChildResult is what a join child prints: wall-clock instants (Unix
// ns) so the parent can place every child on one time line.
type joinChildResult struct {
	Start  int64  `json:"start"`  // released: about to dial
	Answer int64  `json:"answer"` // the GET's answer is in
	Closed int64  `json:"closed"` // the connection is closed
	Err    string `json:"err,omitempty"`
}

// join is Dial + first answer; closeTime is Close alone.
func (r joinChildResult) join() time.Duration      { return time.Duration(r.Answer - r.Start) }
func (r joinChildResult) closeTime() time.Duration { return time.Duration(r.Closed - r.Answer) }

// joinChildIfRequested runs a join child and exits, when this process is
// one.
func joinChildIfRequested() {
	js := os.Getenv(envJoin)
	if js == "" {
		return
	}
	var s joinChildSpec
	if err := json.Unmarshal([]byte(js), &s); err != nil {
		fmt.Fprintln(os.Stderr, "jakiro-bench join child:", err)
		os.Exit(2)
	}
	fmt.Println("READY")
	// The parent closes the pipe's write end to start the burst, or dies:
	// EOF either way. A parent that hangs is bounded too.
	go func() {
		time.Sleep(5 * time.Minute)
		fmt.Fprintln(os.Stderr, "jakiro-bench join child: no burst in 5 minutes")
		os.Exit(2)
	}()
	io.Copy(io.Discard, os.NewFile(3, "burst"))
	r := joinOnce(s)
	b, _ := json.Marshal(r)
	fmt.Println(string(b))
	os.Exit(0)
}

// joinOnce joins, GETs s.Key and closes, timing each step.
func joinOnce(s joinChildSpec) joinChildResult {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r := joinChildResult{Start: time.Now().UnixNano()}
	var err error
	switch s.System {
	case "jakiro":
		err = joinJakiroOnce(ctx, s, &r)
	case "memcached":
		err = joinMemcachedOnce(ctx, s, &r)
	default:
		err = fmt.Errorf("unknown system %q", s.System)
	}
	if err != nil {
		r.Err = err.Error()
	}
	return r
}

func joinJakiroOnce(ctx context.Context, s joinChildSpec, r *joinChildResult) error {
	c, err := client.Dial(ctx, s.Addr)
	if err != nil {
		return err
	}
	v, err := c.Get(ctx, []byte(s.Key))
	r.Answer = time.Now().UnixNano()
	if err == nil && len(v) != s.Size {
		err = fmt.Errorf("GET %s: %d bytes, want %d", s.Key, len(v), s.Size)
	}
	c.Close()
	r.Closed = time.Now().UnixNano()
	return err
}

func joinMemcachedOnce(ctx context.Context, s joinChildSpec, r *joinChildResult) error {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", s.Addr)
	if err != nil {
		return err
	}
	dl, _ := ctx.Deadline()
	conn.SetDeadline(dl)
	_, err = fmt.Fprintf(conn, "get %s\r\n", s.Key)
	if err == nil {
		err = readMemcachedValue(bufio.NewReader(conn), s.Key, s.Size)
	}
	r.Answer = time.Now().UnixNano()
	conn.Close()
	r.Closed = time.Now().UnixNano()
	return err
}

// readMemcachedValue reads a get's answer for key: "VALUE key flags n",
// n bytes, "END".
func readMemcachedValue(br *bufio.Reader, key string, size int) error {
	line, err := br.ReadString('\n')
	if err != nil {
		return err
	}
	var k string
	var flags, n int
	if _, err := fmt.Sscanf(line, "VALUE %s %d %d\r\n", &k, &flags, &n); err != nil || k != key {
		return fmt.Errorf("get %s: answer %q", key, strings.TrimSpace(line))
	}
	if n != size {
		return fmt.Errorf("get %s: %d bytes, want %d", key, n, size)
	}
	if _, err := io.CopyN(io.Discard, br, int64(n)+2); err != nil {
		return err
	}
	line, err = br.ReadString('\n')
	if err != nil {
		return err
	}
	if line != "END\r\n" {
		return fmt.Errorf("get %s: %q after the value, want END", key, strings.TrimSpace(line))
	}
	return nil
}

// burstResult is one burst: every child's result, and the instant the
// burst was released (Unix ns).
type burstResult struct {
	Release int64
	Results []joinChildResult
}

// runBurst starts one join child per spec, waits until every one is
// READY, calls released (if not nil) with the instant it releases them
// all at once, and returns their results. Children that fail to answer
// within a minute are killed and counted as errors.
func runBurst(ctx context.Context, specs []joinChildSpec, sessions bool, released func(time.Time)) (burstResult, error) {
	pr, pw, err := os.Pipe()
	if err != nil {
		return burstResult{}, err
	}
	defer pw.Close()
	type child struct {
		ready chan bool
		res   chan joinChildResult
	}
	children := make([]*child, len(specs))
	for i := range children {
		children[i] = &child{ready: make(chan bool, 1), res: make(chan joinChildResult, 1)}
	}
	// The children are a spawner's, in a process group of its own (so
	// that kill reaches them all), in a session of its own with sessions.
	js, _ := json.Marshal(specs)
	spawner := exec.Command(os.Args[0])
	spawner.Env = append(os.Environ(), envJoinSpawn+"=1")
	spawner.SysProcAttr = &syscall.SysProcAttr{Setsid: sessions, Setpgid: !sessions}
	spawner.ExtraFiles = []*os.File{pr}
	spawner.Stdin = bytes.NewReader(js)
	spawner.Stderr = os.Stderr
	out, err := spawner.StdoutPipe()
	if err == nil {
		err = spawner.Start()
	}
	pr.Close() // the spawner and its children hold it now
	if err != nil {
		return burstResult{}, fmt.Errorf("start the join children's spawner: %w", err)
	}
	// kill ends the spawner's process group: it and every child it started.
	kill := func() { syscall.Kill(-spawner.Process.Pid, syscall.SIGKILL) }
	relayed := make(chan struct{})
	go func() {
		defer close(relayed)
		relayBurst(out, func(i int, line string) {
			if i < 0 || i >= len(children) {
				return
			}
			c := children[i]
			switch line {
			case "READY":
				c.ready <- true
			case "NOTREADY":
				c.ready <- false
				c.res <- joinChildResult{Err: "join child: did not start"}
			default:
				var r joinChildResult
				if err := json.Unmarshal([]byte(line), &r); err != nil {
					r = joinChildResult{Err: fmt.Sprintf("join child: no result: %v", err)}
				}
				c.res <- r
			}
		})
	}()
	defer func() {
		kill()
		<-relayed
		spawner.Wait()
	}()
	deadline := time.After(time.Minute)
	for i, c := range children {
		select {
		case ok := <-c.ready:
			if !ok {
				return burstResult{}, fmt.Errorf("join child %d did not start", i)
			}
		case <-deadline:
			return burstResult{}, fmt.Errorf("join children not ready after a minute")
		case <-ctx.Done():
			return burstResult{}, ctx.Err()
		}
	}
	t := time.Now()
	if released != nil {
		released(t)
	}
	pw.Close() // go
	b := burstResult{Release: t.UnixNano(), Results: make([]joinChildResult, len(children))}
	deadline = time.After(time.Minute)
	for i, c := range children {
		select {
		case b.Results[i] = <-c.res:
		case <-deadline:
			b.Results[i] = joinChildResult{Err: "no result after a minute"}
		}
	}
	return b, nil
}

// relayBurst reads the spawner's lines, "i line", and hands each to f.
func relayBurst(r io.Reader, f func(i int, line string)) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		n, line, ok := strings.Cut(sc.Text(), " ")
		if !ok {
			continue
		}
		if i, err := strconv.Atoi(n); err == nil {
			f(i, line)
		}
	}
}

// A burst's children are started by a spawner, this binary re-executed.
// With --join-sessions it leads a session of its own: under the kernel's
// autogroups (or one cgroup per service, as systemd runs them) a burst
// then shares the CPU as one group beside the server and the established
// client, as the workers a service forks in a spike do, instead of as 256
// peers of every other process on the host. The spawner starts a child per spec
// (its stdin: a JSON array), passes them the burst pipe it inherits as
// fd 3, and relays their lines as "i line" (i: the spec's index; a child
// that never said READY: "i NOTREADY").
const envJoinSpawn = "JAKIRO_BENCH_JOIN_SPAWN"

// joinSpawnerIfRequested runs the spawner and exits, when this process
// is one.
func joinSpawnerIfRequested() {
	if os.Getenv(envJoinSpawn) == "" {
		return
	}
	var specs []joinChildSpec
	if err := json.NewDecoder(os.Stdin).Decode(&specs); err != nil {
		fmt.Fprintln(os.Stderr, "jakiro-bench join spawner:", err)
		os.Exit(2)
	}
	burst := os.NewFile(3, "burst")
	env := make([]string, 0, len(os.Environ())+1)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, envJoinSpawn+"=") {
			env = append(env, kv)
		}
	}
	var mu sync.Mutex
	say := func(i int, line string) {
		mu.Lock()
		fmt.Printf("%d %s\n", i, line)
		mu.Unlock()
	}
	var wg sync.WaitGroup
	for i, s := range specs {
		js, _ := json.Marshal(s)
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(env, envJoin+"="+string(js))
		cmd.ExtraFiles = []*os.File{burst}
		cmd.Stderr = os.Stderr
		out, err := cmd.StdoutPipe()
		if err == nil {
			err = cmd.Start()
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "jakiro-bench join spawner: child %d: %v\n", i, err)
			say(i, "NOTREADY")
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			br := bufio.NewReader(out)
			line, err := br.ReadString('\n')
			if err != nil || strings.TrimSpace(line) != "READY" {
				say(i, "NOTREADY")
			} else {
				say(i, "READY")
				line, err = br.ReadString('\n')
				if err != nil {
					b, _ := json.Marshal(joinChildResult{Err: fmt.Sprintf("join child: no result: %v", err)})
					line = string(b)
				}
				say(i, strings.TrimSpace(line))
			}
			io.Copy(io.Discard, br)
			cmd.Wait()
		}()
	}
	burst.Close() // the children hold it
	wg.Wait()
	os.Exit(0)
}

// burstStats summarise one burst.
type burstStats struct {
	N, Errors          int
	FirstErr           string
	JoinP50, JoinP99   float64 // µs, Dial + first answer, over the children that answered
	CloseP50           float64 // µs
	AllAnswered        float64 // ms from release to the last answer
	AllClosed          float64 // ms from release to the last close
	LastClosed         int64   // Unix ns of the last close
	LateStart, MaxJoin float64 // ms: the latest child's start after release; the longest join
}

// stats reads a burst: percentiles over the children that answered, the
// times until all of them had answered and closed. An error child counts
// as an error and is left out of the percentiles and times.
func (b burstResult) stats() burstStats {
	s := burstStats{N: len(b.Results)}
	var joins, closes []float64
	for _, r := range b.Results {
		if r.Err != "" || r.Answer == 0 {
			s.Errors++
			if s.FirstErr == "" {
				s.FirstErr = r.Err
			}
			continue
		}
		joins = append(joins, float64(r.join().Nanoseconds())/1e3)
		closes = append(closes, float64(r.closeTime().Nanoseconds())/1e3)
		s.AllAnswered = max(s.AllAnswered, float64(r.Answer-b.Release)/1e6)
		s.AllClosed = max(s.AllClosed, float64(r.Closed-b.Release)/1e6)
		s.LastClosed = max(s.LastClosed, r.Closed)
		s.LateStart = max(s.LateStart, float64(r.Start-b.Release)/1e6)
	}
	if len(joins) > 0 {
		s.JoinP50, s.JoinP99 = percentile(joins, 50), percentile(joins, 99)
		s.CloseP50 = percentile(closes, 50)
		s.MaxJoin = percentile(joins, 100) / 1e3
	}
	return s
}

// percentile is the nearest-rank percentile q (0 < q <= 100) of xs.
func percentile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	i := int(math.Ceil(q/100*float64(len(s)))) - 1
	return s[min(max(i, 0), len(s)-1)]
}

// errNoAnswer: every child of a burst failed.
var errNoAnswer = errors.New("no join child answered")
