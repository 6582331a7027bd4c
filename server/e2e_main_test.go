package server_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jakiro-kv/jakiro/fabric/fabricbench"
	"github.com/jakiro-kv/jakiro/server"
)

// The end-to-end tests run the server, and some clients, as separate
// processes: this test binary re-executed with JAKIRO_E2E_ROLE set.
func TestMain(m *testing.M) {
	fabricbench.ServeChildIfRequested() // the raw-fabric target of BenchmarkGet
	switch os.Getenv("JAKIRO_E2E_ROLE") {
	case "server":
		if os.Getenv("JAKIRO_E2E_ROLE_OVERRIDE") == "echo" {
			os.Exit(echoChild())
		}
		os.Exit(serverChild())
	case "client":
		os.Exit(clientChild())
	case "victim":
		os.Exit(victimChild())
	}
	os.Exit(m.Run())
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil {
		return v
	}
	return def
}

func serverChild() int {
	srv, err := server.New(server.Config{
		Listen:     os.Getenv("JAKIRO_E2E_LISTEN"),
		Partitions: envInt("JAKIRO_E2E_PARTITIONS", 2),
		Memory:     64 << 20,
		MaxValue:   envInt("JAKIRO_E2E_MAXVALUE", 64<<10),
		IdlePoll:   os.Getenv("JAKIRO_E2E_IDLE") == "poll",
		Logf: func(f string, a ...any) {
			if os.Getenv("JAKIRO_E2E_LOG") != "" {
				fmt.Fprintf(os.Stderr, "server: "+f+"\n", a...)
			}
		},
		DozeSleep: time.Duration(envInt("JAKIRO_E2E_DOZE_NS", 0)),
	})
	if err != nil {
		fmt.Println("ERROR", err)
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	fmt.Println("READY", srv.Addr())
	err = srv.Serve(ctx)
	srv.Close()
	if err != nil {
		fmt.Fprintln(os.Stderr, "serve:", err)
		return 1
	}
	return 0
}

// e2eListen is the listen URL for one server: JAKIRO_E2E_LISTEN when set
// (the RDMA VM sets an rdma:// URL), else per fabric.
func e2eListen(t *testing.T, fab string) string { return e2eListenTB(t, fab) }

func e2eListenTB(t testing.TB, fab string) string {
	if v := os.Getenv("JAKIRO_E2E_LISTEN"); v != "" {
		return v
	}
	switch fab {
	case "rdma":
		return "rdma://192.168.77.1:0"
	case "tcp":
		return "tcp://127.0.0.1:0"
	default:
		return "shm://" + filepath.Join(t.TempDir(), "jakiro.sock")
	}
}

// e2eFabrics are the fabrics the end-to-end tests run over.
func e2eFabrics() []string {
	if v := os.Getenv("JAKIRO_E2E_FABRICS"); v != "" {
		return strings.Split(v, ",")
	}
	if inRDMAVM() {
		return []string{"rdma"}
	}
	return []string{"shm", "tcp"}
}

// inRDMAVM: scripts/rxe-vm/test-rdma.sh runs this binary in a VM with rxe0.
func inRDMAVM() bool { return os.Getenv("JAKIRO_RDMA_VM") == "1" }

// scale shrinks workloads under CPU emulation in the VM.
func scale(n int) int {
	if inRDMAVM() {
		return max(n/10, 10)
	}
	return n
}

type serverProc struct {
	cmd  *exec.Cmd
	addr string
}

// startServer starts a server process and returns its address. Cleanup
// sends SIGTERM and checks a clean exit.
func startServer(t *testing.T, listen string, extraEnv ...string) *serverProc {
	return startServerTB(t, listen, extraEnv...)
}

func startServerB(b *testing.B, fab string) *serverProc {
	return startServerTB(b, e2eListenTB(b, fab))
}

func startServerTB(t testing.TB, listen string, extraEnv ...string) *serverProc {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), append([]string{"JAKIRO_E2E_ROLE=server", "JAKIRO_E2E_LISTEN=" + listen}, extraEnv...)...)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			select {
			case line <- sc.Text():
			default:
			}
		}
	}()
	var l string
	select {
	case l = <-line:
	case <-time.After(20 * time.Second):
		cmd.Process.Kill()
		t.Fatal("server did not start in 20s")
	}
	addr, ok := strings.CutPrefix(l, "READY ")
	if !ok {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("server: %s", l)
	}
	sp := &serverProc{cmd: cmd, addr: addr}
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("server did not shut down cleanly on SIGTERM: %v", err)
			}
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			t.Error("server ignored SIGTERM for 10s")
		}
	})
	return sp
}

// child starts this binary in another role against addr.
func child(t *testing.T, role, addr string, env ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), append([]string{"JAKIRO_E2E_ROLE=" + role, "JAKIRO_E2E_ADDR=" + addr}, env...)...)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd
}
