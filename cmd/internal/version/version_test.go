package version

import (
	"runtime/debug"
	"strings"
	"testing"
)

func TestFromBuildInfo(t *testing.T) {
	const sha = "9c9fb78a1b2c3d4e5f60718293a4b5c6d7e8f901"
	bi := &debug.BuildInfo{GoVersion: "go1.99.1", Main: debug.Module{Version: "v1.2.3"},
		Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: sha}, {Key: "vcs.modified", Value: "true"}, {Key: "vcs.time", Value: "2025-11-23T07:33:00Z"}}}
	in := fromBuildInfo(bi, "ffff", []string{"shm", "tcp"})
	if in.Commit != sha || !in.Dirty || in.Module != "v1.2.3" || in.Go != "go1.99.1" {
		t.Fatalf("build info stamps beat the linker fallback: got %+v", in)
	}
	txt := in.Text("jakiro")
	for _, want := range []string{"jakiro v1.2.3\n", "commit: " + sha + "+dirty (2025-11-23T07:33:00Z)\n", "go: go1.99.1 ", "fabrics: shm:// tcp:// (no rdma://: `make build-rdma`"} {
		if !strings.Contains(txt, want) {
			t.Errorf("--version text lacks %q:\n%s", want, txt)
		}
	}
}

func TestLinkerCommitFallback(t *testing.T) {
	in := fromBuildInfo(&debug.BuildInfo{GoVersion: "go1.99.1"}, "abc123+dirty", []string{"rdma", "shm"})
	if in.Commit != "abc123" || !in.Dirty || in.Module != "(devel)" {
		t.Fatalf("fallback commit: got %+v", in)
	}
	if txt := in.Text("x"); strings.Contains(txt, "make build-rdma") || !strings.Contains(txt, "commit: abc123+dirty\n") {
		t.Errorf("with rdma compiled in and the fallback commit:\n%s", txt)
	}
	if txt := fromBuildInfo(nil, "", nil).Text("x"); !strings.Contains(txt, "commit: unknown") {
		t.Errorf("no commit known:\n%s", txt)
	}
}
