package version

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/jakiro-kv/jakiro/fabric"
	_ "github.com/jakiro-kv/jakiro/fabric/providers" // registers every fabric built in
)

// commit is the Makefile's fallback (see the package doc): "SHA" or "SHA+dirty".
var commit string

// Info is what a binary was built from.
type Info struct {
	Module   string   // module version: a tag, a pseudo-version, or "(devel)"
	Commit   string   // full SHA, "" if unknown
	Dirty    bool     // the tree had uncommitted changes
	Time     string   // commit time (RFC 3339), "" if unknown
	Go       string   // toolchain, e.g. go1.26.8
	Platform string   // GOOS/GOARCH
	Fabrics  []string // URL schemes compiled in, e.g. shm, tcp
}

// Read reports this binary's Info.
func Read() Info {
	bi, _ := debug.ReadBuildInfo()
	return fromBuildInfo(bi, commit, fabric.Schemes())
}

func fromBuildInfo(bi *debug.BuildInfo, ldCommit string, schemes []string) Info {
	in := Info{Module: "(devel)", Go: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH, Fabrics: schemes}
	if bi != nil {
		if bi.Main.Version != "" {
			in.Module = bi.Main.Version
		}
		in.Go = bi.GoVersion
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				in.Commit = s.Value
			case "vcs.modified":
				in.Dirty = s.Value == "true"
			case "vcs.time":
				in.Time = s.Value
			}
		}
	}
	if in.Commit == "" && ldCommit != "" {
		in.Commit, in.Dirty = strings.CutSuffix(ldCommit, "+dirty")
	}
	return in
}

// Text is the --version output of the named program.
func (in Info) Text(program string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s\n", program, in.Module)
	switch {
	case in.Commit == "":
		b.WriteString("commit: unknown (built without VCS stamping; `make build` records it)\n")
	default:
		c := in.Commit
		if in.Dirty {
			c += "+dirty"
		}
		if in.Time != "" {
			c += " (" + in.Time + ")"
		}
		fmt.Fprintf(&b, "commit: %s\n", c)
	}
	fmt.Fprintf(&b, "go: %s %s\n", in.Go, in.Platform)
	fab := make([]string, len(in.Fabrics))
	for i, s := range in.Fabrics {
		fab[i] = s + "://"
	}
	fmt.Fprintf(&b, "fabrics: %s", strings.Join(fab, " "))
	if !slices.Contains(in.Fabrics, "rdma") {
		b.WriteString(" (no rdma://: `make build-rdma` builds it in)")
	}
	b.WriteString("\n")
	return b.String()
}

// SetFlag gives app a --version flag (no -v: commands use that for
// verbose) that prints Text.
func SetFlag(app *cli.App) {
	app.Version = Read().Module
	cli.VersionFlag = &cli.BoolFlag{Name: "version", Usage: "print the version, commit, Go version and fabrics compiled in"}
	cli.VersionPrinter = func(c *cli.Context) {
		fmt.Fprint(c.App.Writer, Read().Text(c.App.Name))
	}
}
