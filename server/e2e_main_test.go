package server_test

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jakiro-kv/jakiro/fabric"
	"github.com/jakiro-kv/jakiro/fabric/fabricbench"
	_ "github.com/jakiro-kv/jakiro/fabric/providers" // the fabrics the tests dial
	"github.com/jakiro-kv/jakiro/rfp"
	"github.com/jakiro-kv/jakiro/server"
	"github.com/jakiro-kv/jakiro/server/servertest"
)

// The end-to-end tests run the server, and some clients, as separate
// processes: this test binary re-executed with JAKIRO_E2E_ROLE set.
func TestMain(m *testing.M) {
	fabricbench.ServeChildIfRequested() // the raw-fabric target of BenchmarkGet
	// Every server child requires a token and every client presents it
	// (rfp.Dial reads the environment): rdma:// listens beyond loopback,
	// which protected mode refuses without one, and auth gets exercised on
	// every fabric.
	if os.Getenv(rfp.AuthTokenEnv) == "" {
		var b [16]byte
		if _, err := rand.Read(b[:]); err != nil {
			panic(err)
		}
		os.Setenv(rfp.AuthTokenEnv, hex.EncodeToString(b[:]))
	}
	if listen := servertest.Listen(); listen != "" {
		if os.Getenv("JAKIRO_E2E_ROLE_OVERRIDE") == "echo" {
			os.Exit(echoChild(listen))
		}
		os.Exit(servertest.Serve(serverConfig(listen)))
	}
	switch os.Getenv("JAKIRO_E2E_ROLE") {
	case "client":
		os.Exit(clientChild())
	case "victim":
		os.Exit(victimChild())
	case "replyhog":
		os.Exit(replyHogChild())
	case "tcpattack":
		os.Exit(attackChild())
	case "wrapattack":
		os.Exit(wrapAttackChild())
	case "shmflag":
		os.Exit(shmFlagChild())
	case "sockfloor":
		os.Exit(socketFloorChild())
	}
	os.Exit(m.Run())
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil {
		return v
	}
	return def
}

// serverConfig is the e2e server child's configuration; JAKIRO_E2E_*
// variables tune it per test.
func serverConfig(listen string) server.Config {
	return server.Config{
		Listen:     listen,
		AuthToken:  os.Getenv(rfp.AuthTokenEnv),
		Partitions: envInt("JAKIRO_E2E_PARTITIONS", 2),
		Memory:     64 << 20,
		MaxValue:   envInt("JAKIRO_E2E_MAXVALUE", 64<<10),
		IdlePoll:   os.Getenv("JAKIRO_E2E_IDLE") == "poll",
		Logf: func(f string, a ...any) {
			if os.Getenv("JAKIRO_E2E_LOG") != "" {
				fmt.Fprintf(os.Stderr, "server: "+f+"\n", a...)
			}
		},
		DozeSleep:    time.Duration(envInt("JAKIRO_E2E_DOZE_NS", 0)),
		MaxClients:   envInt("JAKIRO_E2E_MAX_CLIENTS", 0),
		ReplyTimeout: time.Duration(envInt("JAKIRO_E2E_REPLY_TIMEOUT_NS", 0)),
		Fabric:       fabric.Options{QueueDepth: envInt("JAKIRO_E2E_QUEUE_DEPTH", 0)},
		SpareProcs:   true, // as cmd/jakiro runs
	}
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

// startServer starts the e2e server child on listen, with env added to
// its environment.
func startServer(t testing.TB, listen string, env ...string) *servertest.Proc {
	return servertest.Start(t, listen, env...)
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
