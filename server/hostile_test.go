package server_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jakiro-kv/jakiro/client"
	"github.com/jakiro-kv/jakiro/fabric"
	"github.com/jakiro-kv/jakiro/rfp"
)

// Hostile tcp peers against a default `jakiro server` (issue 25): an
// attacker process (this test binary, role "tcpattack") speaks the
// fabric/tcp wire by hand beside an honest client in the test process,
// and the server's RSS, the honest client's rate and the server's
// admissions are measured.

const envAttack = "JAKIRO_E2E_ATTACK" // kind,addr,conns

// rawTCPPeer completes the fabric/tcp and rfp handshakes by hand and
// returns the socket and the grant it was given.
func rawTCPPeer(addr string) (*net.TCPConn, fabric.Desc, error) {
	nc, err := net.DialTimeout("tcp", strings.TrimPrefix(addr, "tcp://"), 3*time.Second)
	if err != nil {
		return nil, fabric.Desc{}, err
	}
	h := rfp.Hello{Version: rfp.Version, Slots: 32}
	if tok := os.Getenv(rfp.AuthTokenEnv); tok != "" {
		h.Proof, h.HasProof = rfp.AuthProof(tok), true
	}
	data := h.Put()
	// fabric/tcp hello: magic[8] version:u16 kind:u8 dataLen:u8 depth:u32.
	hs := append([]byte("JAKIROtc"), 1, 0, 1, byte(len(data)))
	hs = binary.LittleEndian.AppendUint32(hs, 8)
	_ = nc.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := nc.Write(append(hs, data...)); err != nil {
		nc.Close()
		return nil, fabric.Desc{}, err
	}
	var rh [16]byte
	if _, err := io.ReadFull(nc, rh[:]); err != nil {
		nc.Close()
		return nil, fabric.Desc{}, err
	}
	reply := make([]byte, rh[11])
	if _, err := io.ReadFull(nc, reply); err != nil {
		nc.Close()
		return nil, fabric.Desc{}, err
	}
	w, err := rfp.ParseWelcome(reply)
	if err != nil {
		nc.Close()
		return nil, fabric.Desc{}, err
	}
	_ = nc.SetDeadline(time.Time{})
	return nc.(*net.TCPConn), w.Grant, nil
}

// wholeReads is a burst of READs of the whole grant: 20 bytes each, 256
// of them in about 5 KiB.
func wholeReads(g fabric.Desc) []byte {
	var b []byte
	for range 256 {
		var f [20]byte
		f[0] = 1 // frameRead
		binary.LittleEndian.PutUint32(f[4:], g.Key)
		binary.LittleEndian.PutUint64(f[8:], g.Addr)
		binary.LittleEndian.PutUint32(f[16:], uint32(g.Len))
		b = append(b, f[:]...)
	}
	return b
}

// attackChild runs until killed:
//   - amplify: conns connections each send wholeReads, read nothing and
//     redial after 1.5 s (the server drops them after its 1 s send
//     timeout);
//   - vanish: conns loops of dial, wholeReads, reset (SO_LINGER 0),
//     10 ms pause;
//   - slowread: conns connections each send wholeReads, then read 64 KiB
//     every 5 ms.
func attackChild() int {
	f := strings.Split(os.Getenv(envAttack), ",")
	kind, addr := f[0], f[1]
	conns, _ := strconv.Atoi(f[2])
	return attackLoops(conns, func(attacked func()) {
		for {
			nc, g, err := rawTCPPeer(addr)
			if err != nil {
				time.Sleep(10 * time.Millisecond)
				continue
			}
			nc.Write(wholeReads(g))
			switch kind {
			case "amplify":
				// Past the server's send timeout (1 s), reading nothing.
				attacked()
				time.Sleep(1500 * time.Millisecond)
				nc.Close()
			case "vanish":
				nc.SetLinger(0)
				nc.Close()
				attacked()
				// Paced: on a 2-core machine an unpaced loop takes the
				// honest client's core, whatever the server does.
				time.Sleep(10 * time.Millisecond)
			case "slowread":
				attacked()
				buf := make([]byte, 64<<10)
				for {
					if _, err := nc.Read(buf); err != nil {
						break
					}
					time.Sleep(5 * time.Millisecond)
				}
				nc.Close()
			}
		}
	})
}

// attackLoops runs conns attacker goroutines, each calling attacked once
// it has attacked, says ATTACKING on stdout when all have, and never
// returns.
func attackLoops(conns int, loop func(attacked func())) int {
	var ready sync.WaitGroup
	for range conns {
		ready.Add(1)
		go func() {
			var once sync.Once
			loop(func() { once.Do(ready.Done) })
		}()
	}
	ready.Wait()
	fmt.Println("ATTACKING")
	select {}
}

// startAttack runs attackChild in a process of its own and waits until
// every connection has attacked once. Cleanup kills it.
func startAttack(t testing.TB, kind, addr string, conns int) *exec.Cmd {
	return startAttacker(t, "tcpattack", kind, addr, conns)
}

// startAttacker runs this test binary in the attacker role given and waits
// until it says it is attacking. Cleanup kills it.
func startAttacker(t testing.TB, role, kind, addr string, conns int) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "JAKIRO_E2E_ROLE="+role, envAttack+"="+kind+","+addr+","+strconv.Itoa(conns))
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	line := make(chan string, 1)
	go func() {
		b := make([]byte, 64)
		n, _ := out.Read(b)
		line <- string(b[:n])
		io.Copy(io.Discard, out)
	}()
	select {
	case l := <-line:
		if !strings.HasPrefix(l, "ATTACKING") {
			t.Fatalf("attacker: %q", l)
		}
		t.Log("attacker:", strings.TrimSpace(l))
	case <-time.After(20 * time.Second):
		t.Fatal("attacker not attacking after 20 s")
	}
	return cmd
}

// honestRate is the GETs per second one client completes in d, each one
// checked against the value it PUT.
func honestRate(t testing.TB, c *client.Client, d time.Duration) float64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d+10*time.Second)
	defer cancel()
	key := []byte("hostile:honest")
	val := bytes.Repeat([]byte("v"), 32)
	if err := c.Put(ctx, key, val, 0); err != nil {
		t.Fatal("honest PUT:", err)
	}
	n := 0
	start := time.Now()
	for time.Since(start) < d {
		v, err := c.Get(ctx, key)
		if err != nil {
			t.Fatal("honest GET:", err)
		}
		if !bytes.Equal(v, val) {
			t.Fatalf("honest GET returned %q", v)
		}
		n++
	}
	return float64(n) / time.Since(start).Seconds()
}

// hostileServer starts a default tcp `jakiro server` (extra flags added),
// waits for it to settle and returns it with its idle RSS and an honest
// client.
func hostileServer(t testing.TB, extra ...string) (*jakiroProc, int64, *client.Client) {
	t.Helper()
	return hostileServerOn(t, "tcp://127.0.0.1:0", extra...)
}

// hostileServerOn is hostileServer listening on listen.
func hostileServerOn(t testing.TB, listen string, extra ...string) (*jakiroProc, int64, *client.Client) {
	t.Helper()
	srv := startJakiro(t, buildJakiro(t), listen, extra...)
	c := dialT(t, srv.Addr)
	honestRate(t, c, 200*time.Millisecond) // warm up
	return srv, rss(t, srv.pid()), c
}

// honestRates is what the honest client did beside an attack: its
// median rates alone and under attack, and the median of each pair's
// ratio (attacked over the alone run just before it).
type honestRates struct{ alone, attacked, ratio float64 }

// attackRates measures the honest client's rate alone, then under the
// attack, alternating, pairs times each, and takes medians: on a 2-core
// machine one window of a tcp client beside two spinning processes
// varies by ±40%, and a loaded machine's drift hits both sides of a pair.
func attackRates(t testing.TB, c *client.Client, pairs int, start, stop func()) honestRates {
	t.Helper()
	const d = 400 * time.Millisecond
	var alone, attacked, ratio []float64
	for range pairs {
		a := honestRate(t, c, d)
		start()
		b := honestRate(t, c, d)
		stop()
		alone, attacked, ratio = append(alone, a), append(attacked, b), append(ratio, b/a)
	}
	return honestRates{median(alone), median(attacked), median(ratio)}
}

func median(xs []float64) float64 {
	slices.Sort(xs)
	n := len(xs)
	return (xs[(n-1)/2] + xs[n/2]) / 2
}

// Ten connections that each ask for 256 whole-grant READs and read none
// of the answers: the server's RSS stays within 2 × idle + 64 MiB per
// connection (it stages references, not copies: far less in fact), and
// the honest client is not starved (its bar, 0.5x, is BenchmarkHostile's).
func TestHostileReadAmplification(t *testing.T) {
	srv, idle, c := hostileServer(t)
	const conns = 10
	var peak int64
	start, stop := amplifyAttack(t, srv, conns, &peak)
	r := attackRates(t, c, 6, start, stop)
	limit := 2*idle + conns*64<<20
	t.Logf("server RSS idle %.1f MiB, under attack at most %.1f MiB (limit %.1f MiB); honest client %.0f ops/s alone, %.0f under attack (median of pairs %.2fx)",
		mib(idle), mib(peak), mib(limit), r.alone, r.attacked, r.ratio)
	if peak > limit {
		t.Errorf("server RSS %.1f MiB under attack, over %.1f MiB", mib(peak), mib(limit))
	}
	// Well under the bar: no copy per READ is staged.
	if peak > idle+64<<20 {
		t.Errorf("server RSS grew by %.1f MiB: READ answers are copied", mib(peak-idle))
	}
	checkNotStarved(t, r)
}

// amplifyAttack starts and stops the read-amplification attacker, keeping
// the server's peak RSS in peak.
func amplifyAttack(t testing.TB, srv *jakiroProc, conns int, peak *int64) (start, stop func()) {
	var attacker *exec.Cmd
	return func() {
			attacker = startAttack(t, "amplify", srv.Addr, conns)
			time.Sleep(100 * time.Millisecond)
			*peak = max(*peak, rss(t, srv.pid()))
		}, func() {
			*peak = max(*peak, rss(t, srv.pid()))
			attacker.Process.Kill()
			attacker.Wait()
		}
}

// Peers that ask for whole-grant READs and reset their connection at
// once, in a loop, against a server admitting 32 clients: dead sessions
// leave the table promptly (new dials are admitted during the attack, one
// client is counted soon after), the RSS and the descriptors stay
// bounded, and the honest client is not starved: the loop's handshakes
// are paced (fabric/tcp's churn pacing, tested there), so they cannot
// take the cores. The honest client's bar, 0.7x, is BenchmarkHostile's.
func TestHostileVanish(t *testing.T) {
	srv, idle, c := hostileServer(t, "--max-clients", "32")
	idleFDs := openFDCount(t, srv.pid())
	var peak int64
	start, stop := vanishAttack(t, srv, &peak)
	r := attackRates(t, c, 6, start, stop)
	t.Logf("server RSS idle %.1f MiB, at most %.1f MiB under attack; %d fds after; honest client %.0f ops/s alone, %.0f under attack (median of pairs %.2fx)",
		mib(idle), mib(peak), openFDCount(t, srv.pid()), r.alone, r.attacked, r.ratio)
	if peak > 2*idle+64<<20 {
		t.Errorf("server RSS %.1f MiB under attack (idle %.1f MiB)", mib(peak), mib(idle))
	}
	checkNotStarved(t, r)
	if !waitFor(3*time.Second, func() bool { return statsOf(t, c).Clients == 1 }) {
		t.Errorf("%d clients counted 3 s after the attack, want 1", statsOf(t, c).Clients)
	}
	if !waitFor(3*time.Second, func() bool { return openFDCount(t, srv.pid()) <= idleFDs+8 }) {
		t.Errorf("server holds %d descriptors 3 s after the attack, %d before", openFDCount(t, srv.pid()), idleFDs)
	}
}

// vanishAttack starts and stops eight loops of vanishing peers; before
// each stop a new client must be admitted while the attack goes on. The
// server's peak RSS is kept in peak.
func vanishAttack(t testing.TB, srv *jakiroProc, peak *int64) (start, stop func()) {
	const loops = 8
	var attacker *exec.Cmd
	return func() {
			attacker = startAttack(t, "vanish", srv.Addr, loops)
		}, func() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			begin := time.Now()
			nc, err := client.Dial(ctx, srv.Addr)
			if err != nil {
				t.Errorf("a new client during the attack: %v", err)
			} else {
				t.Logf("a new client during the attack dialed in %v", time.Since(begin).Round(time.Millisecond))
				nc.Close()
			}
			*peak = max(*peak, rss(t, srv.pid()))
			attacker.Process.Kill()
			attacker.Wait()
		}
}

// SIGTERM ends a server with 24 slow readers holding staged answers
// within 2 s.
func TestHostileSIGTERM(t *testing.T) {
	srv, _, _ := hostileServer(t)
	startAttack(t, "slowread", srv.Addr, 24)
	time.Sleep(300 * time.Millisecond)
	took, ok := srv.terminate(10 * time.Second)
	t.Logf("server exited %v after SIGTERM with 24 slow readers: %v", took.Round(time.Millisecond), srv.err)
	if !ok || took > 2*time.Second {
		t.Errorf("server took %v to exit on SIGTERM, want at most 2 s", took)
	}
}

// checkNotStarved fails the test when the honest client kept less than
// a quarter of its rate beside an attack (median of pairs): an attack
// that takes the server's cores or stalls its partition. How much of its
// rate the client keeps is a performance bar, measured by
// BenchmarkHostile: a timed ratio in a unit test failed CI in a 2-core
// machine's noisy minutes (0.64x where runs alone give 0.81-0.96x).
func checkNotStarved(t *testing.T, r honestRates) {
	t.Helper()
	const floor = 0.25
	if r.ratio < floor {
		t.Errorf("honest client: %.0f ops/s under attack, %.0f alone (median of pairs %.2fx, starved: under %.2fx)", r.attacked, r.alone, r.ratio, floor)
	}
}

func mib(n int64) float64 { return float64(n) / (1 << 20) }
