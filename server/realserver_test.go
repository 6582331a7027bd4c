package server_test

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The fault and overload tests run the real `jakiro server` command, built
// once per test from ./cmd/jakiro (without -race: its memory is what they
// measure), as an operator would.

// buildJakiro builds cmd/jakiro into a temporary directory of t.
func buildJakiro(t testing.TB) string {
	t.Helper()
	if inRDMAVM() {
		t.Skip("no Go toolchain in the RDMA VM to build cmd/jakiro; these tests run on the host")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go command to build cmd/jakiro: %v", err)
	}
	bin := filepath.Join(t.TempDir(), "jakiro")
	out, err := exec.Command(goBin, "build", "-o", bin, "github.com/jakiro-kv/jakiro/cmd/jakiro").CombinedOutput()
	if err != nil {
		t.Fatalf("go build ./cmd/jakiro: %v\n%s", err, out)
	}
	return bin
}

// jakiroProc is a running `jakiro server`.
type jakiroProc struct {
	cmd  *exec.Cmd
	Addr string
	done chan struct{} // closed when it has exited; then err is set
	err  error
	mu   sync.Mutex
	log  bytes.Buffer
}

// startJakiro runs `bin server --listen listen --quiet args...` and waits
// (30 s at most) for it to serve. Cleanup kills it if it still runs.
func startJakiro(t testing.TB, bin, listen string, args ...string) *jakiroProc {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"server", "--listen", listen, "--quiet"}, args...)...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &jakiroProc{cmd: cmd, done: make(chan struct{})}
	ready := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Text()
			p.mu.Lock()
			p.log.WriteString(line + "\n")
			p.mu.Unlock()
			if _, rest, ok := strings.Cut(line, "jakiro: serving on "); ok {
				addr, _, _ := strings.Cut(rest, " ")
				ready <- addr
			}
		}
		p.err = cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			cmd.Process.Kill()
			<-p.done
		}
	})
	select {
	case p.Addr = <-ready:
	case <-p.done:
		t.Fatalf("jakiro server exited: %v\n%s", p.err, p.logText())
	case <-time.After(30 * time.Second):
		t.Fatalf("jakiro server not serving after 30 s\n%s", p.logText())
	}
	t.Logf("jakiro server pid %d on %s", cmd.Process.Pid, p.Addr)
	return p
}

func (p *jakiroProc) logText() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.log.String()
}

func (p *jakiroProc) pid() int { return p.cmd.Process.Pid }

// rss is the process's resident set in bytes (VmRSS).
func rss(t testing.TB, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		t.Fatalf("read /proc/%d/status: %v", pid, err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				t.Fatalf("VmRSS %q: %v", v, err)
			}
			return kb << 10
		}
	}
	t.Fatalf("no VmRSS in /proc/%d/status", pid)
	return 0
}

// openFDCount is how many fds the process has open.
func openFDCount(t testing.TB, pid int) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/fd")
	if err != nil {
		t.Fatalf("read /proc/%d/fd: %v", pid, err)
	}
	return len(ents)
}

// waitFor polls cond every 20 ms until it holds or d passes, and reports
// whether it held.
func waitFor(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// terminate sends SIGTERM and returns how long the process took to exit
// (up to limit; then it is killed and ok is false).
func (p *jakiroProc) terminate(limit time.Duration) (took time.Duration, ok bool) {
	start := time.Now()
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		return time.Since(start), true
	case <-time.After(limit):
		p.cmd.Process.Kill()
		<-p.done
		return time.Since(start), false
	}
}

// listenFor is a listen URL for a fresh server on fab.
func listenFor(t *testing.T, fab string) string {
	if fab == "tcp" {
		return "tcp://127.0.0.1:0"
	}
	return "shm://" + filepath.Join(t.TempDir(), "jakiro.sock")
}

// hostFabrics are the fabrics the real-process tests run on: shm and tcp
// (JAKIRO_E2E_FABRICS narrows them).
func hostFabrics() []string {
	if v := os.Getenv("JAKIRO_E2E_FABRICS"); v != "" {
		return strings.Split(v, ",")
	}
	return []string{"shm", "tcp"}
}

// freeLoopbackPort is a 127.0.0.1 address with a port free a moment ago.
func freeLoopbackPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// runServerGC makes a server started with --metrics addr --pprof collect
// its garbage (the heap profile's gc=1 runs runtime.GC first).
func runServerGC(t *testing.T, addr string) {
	t.Helper()
	// No keep-alive: an idle connection would be one more fd on the server.
	hc := http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := hc.Get("http://" + addr + "/debug/pprof/heap?gc=1")
	if err != nil {
		t.Fatalf("server GC via pprof: %v", err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
}

// Signal sends sig to the server.
func (p *jakiroProc) Signal(sig os.Signal) { p.cmd.Process.Signal(sig) }
