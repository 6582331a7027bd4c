package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"mvdan.cc/sh/v3/syntax"
)

// The docs test: every command in a ```sh block of README.md and
// docs/*.md runs as written, in order, from the repository's root, against
// servers started by the docs' own `jakiro server` commands. The only
// rewrites: /tmp/jakiro.sock (written out, or a binary's default through
// JAKIRO_ADDR and JAKIRO_LISTEN) becomes a socket in a temporary
// directory, and bin/ the directory the binaries were built into.
//
// A command's trailing comment may state its result, and then it is
// checked: "exit N" (otherwise it must exit 0) and "prints `TEXT`" (its
// whole output, less the final newline).
//
// A command runs if every program it calls is a jakiro binary or in
// docShellTools. Anything else must be in docNotRun, with the reason;
// a command that is neither fails the test, so a new command in the docs
// is either run or visibly excluded.

// docNotRun lists the commands of the docs this test does not run: a
// command starting with prefix is skipped, and the reason logged. An
// entry no command matches fails the test (the list stays current).
var docNotRun = []struct{ prefix, why string }{
	{"make demo", "builds bin/ in the repository and runs a benchmark for minutes; cmd/jakiro-bench tests its parts"},
	{"make test", "is the suite this test runs in"},
	{"bin/jakiro server --listen shm:///tmp/jakiro.sock --memcached", "serves a fixed TCP port (11211) other tests may hold; scripts/memcapable.sh runs the door on a free port in make test"},
}

// docShellTools are programs, besides bin/jakiro and bin/jakiro-bench,
// a doc command may call and still run here: harmless and bounded.
var docShellTools = []string{"echo", "printf", "cat", "head", "tail", "grep", "wc", "sleep", "true", "test", "seq"}

// docCommand is one shell statement from a doc's ```sh block.
type docCommand struct {
	file    string // relative to the repository root
	line    int
	text    string // as written, without its trailing comment
	comment string // its trailing comment, without "#"
	calls   [][]string
}

func (c docCommand) where() string { return fmt.Sprintf("%s:%d", c.file, c.line) }

// docCommands reads every ```sh (or bash, shell) block of file.
func docCommands(t *testing.T, root, file string) []docCommand {
	t.Helper()
	f, err := os.Open(filepath.Join(root, file))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []docCommand
	var block strings.Builder
	start, inBlock := 0, false
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		fence := strings.TrimSpace(line)
		switch {
		case !inBlock && strings.HasPrefix(fence, "```"):
			lang := strings.TrimSpace(strings.TrimPrefix(fence, "```"))
			if lang == "sh" || lang == "bash" || lang == "shell" {
				inBlock, start = true, n+1
				block.Reset()
			}
		case inBlock && fence == "```":
			inBlock = false
			out = append(out, parseBlock(t, file, start, block.String())...)
		case inBlock:
			block.WriteString(line + "\n")
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if inBlock {
		t.Fatalf("%s:%d: a ```sh block that never closes", file, start-1)
	}
	return out
}

// parseBlock splits a block into statements with their trailing comments.
func parseBlock(t *testing.T, file string, firstLine int, src string) []docCommand {
	t.Helper()
	sf, err := syntax.NewParser(syntax.KeepComments(true), syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(src), file)
	if err != nil {
		t.Fatalf("%s: a ```sh block starting at line %d does not parse: %v", file, firstLine, err)
	}
	var comments []syntax.Comment
	syntax.Walk(sf, func(n syntax.Node) bool {
		if c, ok := n.(*syntax.Comment); ok {
			comments = append(comments, *c)
		}
		return true
	})
	var out []docCommand
	for i, st := range sf.Stmts {
		c := docCommand{file: file, line: firstLine + int(st.Pos().Line()) - 1,
			text: src[st.Pos().Offset():st.End().Offset()]}
		nextOnLine := i+1 < len(sf.Stmts) && sf.Stmts[i+1].Pos().Line() == st.End().Line()
		for _, cm := range comments {
			if !nextOnLine && cm.Pos().Line() == st.End().Line() && cm.Pos().After(st.End()) {
				c.comment = strings.TrimSpace(cm.Text)
			}
		}
		syntax.Walk(st, func(n syntax.Node) bool {
			if ce, ok := n.(*syntax.CallExpr); ok && len(ce.Args) > 0 {
				words := make([]string, len(ce.Args))
				for j, w := range ce.Args {
					words[j] = w.Lit() // "" for quoted or expanded words
				}
				c.calls = append(c.calls, words)
			}
			return true
		})
		out = append(out, c)
	}
	return out
}

var (
	wantExit   = regexp.MustCompile(`\bexit (\d+)\b`)
	wantPrints = regexp.MustCompile("\\bprints `([^`]*)`")
	binPrefix  = regexp.MustCompile(`(^|[\s;|&(=])bin/`)
)

// isJakiro: a call of bin/jakiro, jakiro, bin/jakiro-bench or jakiro-bench.
func isJakiro(prog string) bool {
	base := path.Base(prog)
	return (base == "jakiro" || base == "jakiro-bench") && (prog == base || prog == "bin/"+base)
}

func TestDocCommands(t *testing.T) {
	root := repoRoot(t)
	bin := binDir(t)
	tmp := shortTempDir(t)
	sock := "shm://" + filepath.Join(tmp, "jakiro.sock")
	env := cleanEnv("JAKIRO_ADDR="+sock, "JAKIRO_LISTEN="+sock, "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	rewrite := func(s string) string {
		s = strings.ReplaceAll(s, "/tmp/jakiro.sock", filepath.Join(tmp, "jakiro.sock"))
		return binPrefix.ReplaceAllString(s, "${1}"+bin+"/")
	}

	files := []string{"README.md"}
	more, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range more {
		files = append(files, filepath.Join("docs", filepath.Base(m)))
	}
	var cmds []docCommand
	for _, f := range files {
		cmds = append(cmds, docCommands(t, root, f)...)
	}

	servers := map[string]*serverProc{} // by listen address
	defer func() {
		for _, s := range servers {
			s.stop(t)
		}
	}()
	used := make([]bool, len(docNotRun))
	ran, started := 0, 0
	for _, c := range cmds {
		if i := slices.IndexFunc(docNotRun, func(x struct{ prefix, why string }) bool { return strings.HasPrefix(c.text, x.prefix) }); i >= 0 {
			used[i] = true
			t.Logf("%s: not run: %s: %s", c.where(), c.text, docNotRun[i].why)
			continue
		}
		talks, runnable := false, true
		for _, call := range c.calls {
			switch {
			case isJakiro(call[0]):
				talks = true
			case !slices.Contains(docShellTools, call[0]):
				t.Errorf("%s: %q calls %q, neither a jakiro binary nor in docShellTools: make it runnable here, or add it to docNotRun with the reason", c.where(), c.text, call[0])
				runnable = false
			}
		}
		if !runnable {
			continue
		}
		if len(c.calls) == 1 && isJakiro(c.calls[0][0]) && len(c.calls[0]) > 1 && c.calls[0][1] == "server" {
			addr := listenAddr(c.calls[0], sock)
			if s := servers[rewrite(addr)]; s != nil {
				s.stop(t) // the docs start another server at the same address
			}
			cmd := exec.Command("bash", "-c", "exec "+rewrite(c.text))
			cmd.Dir, cmd.Env = root, env
			t.Logf("%s: start %s", c.where(), c.text)
			servers[rewrite(addr)] = startProc(t, cmd, rewrite(addr))
			started++
			continue
		}
		if talks && len(servers) == 0 && !strings.Contains(c.text, "--version") && !strings.Contains(c.text, "--help") {
			t.Errorf("%s: %q runs before any `jakiro server` command in the docs", c.where(), c.text)
			continue
		}
		cmd := exec.Command("bash", "-o", "pipefail", "-c", rewrite(c.text))
		cmd.Dir, cmd.Env = root, env
		begin := time.Now()
		r := runCmd(t, cmd, 5*time.Minute)
		ran++
		t.Logf("%s: %s (exit %d, %v)", c.where(), c.text, r.code, time.Since(begin).Round(time.Millisecond))
		want := 0
		if m := wantExit.FindStringSubmatch(c.comment); m != nil {
			want, _ = strconv.Atoi(m[1])
		}
		if r.code != want {
			t.Errorf("%s: %s\n%v\nwant exit %d", c.where(), c.text, r, want)
		}
		if m := wantPrints.FindStringSubmatch(c.comment); m != nil && strings.TrimSuffix(r.stdout, "\n") != m[1] {
			t.Errorf("%s: %s\nprints %q, the docs say %q", c.where(), c.text, r.stdout, m[1])
		}
	}
	for i, u := range used {
		if !u {
			t.Errorf("docNotRun entry %q matches no command in %v: remove it", docNotRun[i].prefix, files)
		}
	}
	if started == 0 || ran == 0 {
		t.Errorf("the docs started %d servers and ran %d commands: want a `jakiro server` and commands that use it", started, ran)
	}
}

// listenAddr is the address a `jakiro server` call listens on.
func listenAddr(call []string, def string) string {
	for i, w := range call {
		if v, ok := strings.CutPrefix(w, "--listen="); ok {
			return v
		}
		if w == "--listen" && i+1 < len(call) {
			return call[i+1]
		}
	}
	return def
}
