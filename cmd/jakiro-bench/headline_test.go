package main

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

// repo is the repository's root, from this package's directory.
const repo = "../.."

func readReadme(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repo, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

var (
	shownNumber = regexp.MustCompile(`(\d+(?:\.(\d+))?)(?:\s*([kM])\b)?`)
	linkTarget  = regexp.MustCompile(`\]\(([^)]+)\)`)
)

// shown is a number as a table cell shows it: its value in the CSV's unit
// and half its last digit, the rounding it may carry.
type shown struct {
	v, tol float64
	text   string
}

// parseShown reads the one number in a cell ("173.8 k ops/s", "4.72×").
func parseShown(cell string) (shown, error) {
	m := shownNumber.FindAllStringSubmatch(cell, -1)
	if len(m) != 1 {
		return shown{}, fmt.Errorf("cell %q: want one number, found %d", cell, len(m))
	}
	v, err := strconv.ParseFloat(m[0][1], 64)
	if err != nil {
		return shown{}, err
	}
	scale := map[string]float64{"": 1, "k": 1e3, "M": 1e6}[m[0][3]]
	return shown{v * scale, 0.5 * math.Pow(10, -float64(len(m[0][2]))) * scale, cell}, nil
}

// holds reports whether one of row's cells rounds to s.
func (s shown) holds(row []string) bool {
	for _, c := range row {
		if v, err := strconv.ParseFloat(c, 64); err == nil && math.Abs(v-s.v) <= s.tol*(1+1e-9) {
			return true
		}
	}
	return false
}

// traceHeadline checks one line of the headline table against the CSV it
// links, without the generator's code: Jakiro's number and the ratio are
// cells of one row, the peer's number a cell of another row of the same
// CSV (the same run), and the machine, commit and date those of its '#'
// block.
func traceHeadline(line string) error {
	cells := strings.Split(strings.Trim(line, "| "), " | ")
	if len(cells) != 8 {
		return fmt.Errorf("%d cells, want 8 (measurement, Jakiro, peer, peer's number, ratio, machine, commit and date, data)", len(cells))
	}
	link := linkTarget.FindStringSubmatch(cells[7])
	if link == nil {
		return fmt.Errorf("data cell %q links no CSV", cells[7])
	}
	if !strings.HasPrefix(link[1], "results/") || !strings.HasSuffix(link[1], ".csv") {
		return fmt.Errorf("data cell %q: want a CSV under results/", cells[7])
	}
	t, err := readResultsCSV(filepath.Join(repo, filepath.FromSlash(link[1])))
	if err != nil {
		return err
	}
	var nums [3]shown
	for i, c := range []string{cells[1], cells[3], cells[4]} {
		if nums[i], err = parseShown(c); err != nil {
			return err
		}
	}
	jakiro, peer, ratio := nums[0], nums[1], nums[2]
	own := -1
	for i, r := range t.Rows {
		if jakiro.holds(r) && ratio.holds(r) {
			own = i
			break
		}
	}
	if own < 0 {
		return fmt.Errorf("no row of %s holds both %q and %q", link[1], jakiro.text, ratio.text)
	}
	peerFound := false
	for i, r := range t.Rows {
		peerFound = peerFound || (i != own && peer.holds(r))
	}
	if !peerFound {
		return fmt.Errorf("no other row of %s holds the peer's %q", link[1], peer.text)
	}
	cores, cpu, _ := strings.Cut(cells[5], "-core ")
	if cores != t.Meta["cores"] {
		return fmt.Errorf("machine %q: %s says cores: %s", cells[5], link[1], t.Meta["cores"])
	}
	for _, w := range strings.Fields(cpu) {
		if !strings.Contains(t.Meta["cpu"], w) {
			return fmt.Errorf("machine %q: %s says cpu: %s", cells[5], link[1], t.Meta["cpu"])
		}
	}
	commit, date, ok := strings.Cut(strings.TrimPrefix(cells[6], "`"), "` ")
	if !ok || commit == "" || !strings.HasPrefix(t.Meta["commit"], commit) || !strings.HasPrefix(t.Meta["date"], date+"T") {
		return fmt.Errorf("commit and date %q: %s says commit: %s, date: %s", cells[6], link[1], t.Meta["commit"], t.Meta["date"])
	}
	return nil
}

// headlineLines are the table's data rows in the README.
func headlineLines(t *testing.T, doc string) []string {
	t.Helper()
	table, err := readmeHeadline(doc)
	if err != nil {
		t.Fatal("README.md: ", err)
	}
	lines := strings.Split(strings.TrimSuffix(table, "\n"), "\n")
	if len(lines) < 3 || !strings.HasPrefix(lines[0], "| measurement |") || !strings.HasPrefix(lines[1], "|---") {
		t.Fatalf("README.md's headline table: want a header, a rule and rows, got:\n%s", table)
	}
	return lines[2:]
}

// TestHeadlineTraceable: every number of the README's headline table is a
// cell of a CSV row in results/.
func TestHeadlineTraceable(t *testing.T) {
	rows := headlineLines(t, readReadme(t))
	if len(rows) > 10 {
		t.Errorf("the headline table has %d rows, want at most 10", len(rows))
	}
	for _, l := range rows {
		if err := traceHeadline(l); err != nil {
			t.Errorf("README.md headline %q: %v", l, err)
		}
	}
}

// TestHeadlineTraceFails: a number the CSV does not hold, a peer from
// Jakiro's own row, and a wrong commit are caught.
func TestHeadlineTraceFails(t *testing.T) {
	good := headlineLines(t, readReadme(t))[0]
	if err := traceHeadline(good); err != nil {
		t.Fatal(err)
	}
	cells := strings.Split(strings.Trim(good, "| "), " | ")
	bad := func(i int, v string) string {
		c := append([]string(nil), cells...)
		c[i] = v
		return "| " + strings.Join(c, " | ") + " |"
	}
	j, _ := parseShown(cells[1])
	for _, l := range []string{
		bad(1, strconv.FormatFloat(j.v/1e3+0.3, 'f', 1, 64)+" k ops/s"), // Jakiro's number, off by 0.3 k
		bad(3, cells[1]),               // the peer's number taken from Jakiro's row
		bad(4, "9.99×"),                // a ratio no row holds
		bad(6, "`0000000` 2026-11-26"), // another commit
		bad(5, "64-core AMD EPYC"),     // another machine
	} {
		if err := traceHeadline(l); err == nil {
			t.Errorf("%q passed the trace", l)
		}
	}
}

// TestHeadlineCurrent: the table is what `jakiro-bench readme` makes of
// the CSVs now (a new run's CSVs need `make figures` or that command).
func TestHeadlineCurrent(t *testing.T) {
	want, err := headlineTable(filepath.Join(repo, "results"), "results")
	if err != nil {
		t.Fatal(err)
	}
	got, err := readmeHeadline(readReadme(t))
	if err != nil {
		t.Fatal("README.md: ", err)
	}
	if got != want {
		t.Errorf("README.md's headline table is not what results/ gives: run `bin/jakiro-bench readme`\nREADME:\n%s\nresults/:\n%s", got, want)
	}
}

// TestReadmeBars: a README a newcomer reads in five minutes.
func TestReadmeBars(t *testing.T) {
	doc := readReadme(t)
	lines := strings.Split(strings.TrimSuffix(doc, "\n"), "\n")
	if len(lines) > 300 {
		t.Errorf("README.md has %d lines, want at most 300 (the detail belongs in docs/ and results/)", len(lines))
	}
	fence, flagTable := false, false
	for i, l := range lines {
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			fence = !fence
			continue
		}
		// The server's flag table: one row per flag, as long as the flag needs.
		if strings.HasPrefix(l, "| flag |") {
			flagTable = true
		} else if !strings.HasPrefix(l, "|") {
			flagTable = false
		}
		if n := utf8.RuneCountInString(l); !fence && !flagTable && n > 200 {
			t.Errorf("README.md:%d: %d characters, want at most 200 outside code blocks and the flag table", i+1, n)
		}
	}
	if fence {
		t.Error("README.md: a code block that never closes")
	}
}

// copyResults copies the CSVs the headline table reads into a new
// directory, beside a README with the markers.
func copyResults(t *testing.T) (readme, dir string) {
	root := t.TempDir()
	dir = filepath.Join(root, "results")
	for _, h := range headlines {
		b, err := os.ReadFile(filepath.Join(repo, "results", filepath.FromSlash(h.File)))
		if err != nil {
			t.Fatal(err)
		}
		dst := filepath.Join(dir, filepath.FromSlash(h.File))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	readme = filepath.Join(root, "README.md")
	doc := "# x\n\nbefore\n" + headlineBegin + "\nstale\n" + headlineEnd + "\nafter\n"
	if err := os.WriteFile(readme, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	return readme, dir
}

func TestUpdateReadme(t *testing.T) {
	readme, dir := copyResults(t)
	if _, err := updateReadme(readme, dir, true); !errors.Is(err, errStale) {
		t.Fatalf("--check on a stale table: %v, want errStale", err)
	}
	if changed, err := updateReadme(readme, dir, false); err != nil || !changed {
		t.Fatalf("rewrite: changed %v, %v", changed, err)
	}
	b, _ := os.ReadFile(readme)
	table, _ := headlineTable(dir, "results")
	if want := "# x\n\nbefore\n" + headlineBegin + "\n" + table + headlineEnd + "\nafter\n"; string(b) != want {
		t.Fatalf("rewritten README:\n%s\nwant:\n%s", b, want)
	}
	if changed, err := updateReadme(readme, dir, true); err != nil || changed {
		t.Fatalf("--check after the rewrite: changed %v, %v", changed, err)
	}
	if !strings.Contains(table, "[compare.csv](results/compare.csv)") {
		t.Errorf("links are not relative to the README:\n%s", table)
	}
	// The README given as an absolute path, the results relative to here:
	// the links are still relative to the README.
	wd, _ := os.Getwd()
	rel, err := filepath.Rel(wd, dir)
	if err != nil {
		t.Fatal(err)
	}
	abs, _ := filepath.Abs(readme)
	if changed, err := updateReadme(abs, rel, true); err != nil || changed {
		t.Errorf("--check with an absolute README and relative results: changed %v, %v", changed, err)
	}
}

// TestUpdateReadmeBadInput: a CSV without a row the table needs, a ratio
// column that is not the two rows' ratio, or missing markers fail with
// the reason, and the README stays as it was.
func TestUpdateReadmeBadInput(t *testing.T) {
	edit := func(t *testing.T, file, from, to string) {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), from) {
			t.Fatalf("%s lacks %q", file, from)
		}
		if err := os.WriteFile(file, []byte(strings.Replace(string(b), from, to, 1)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		name, file, from, to, want string
	}{
		{"no peer row", "compare.csv", "\nredis,4,", "\nredis-old,4,", "0 rows with system=redis threads=4"},
		{"ratio of other rows", "door.csv", "jakiro-door-p1,", "ops_vs_memcached+0.2", "not the rows it compares"},
		{"no commit", "door.csv", "# commit: ", "# built: ", "no '# commit:'"},
		{"not a number", "compare_tcp.csv", "redis,1,", "ops_per_sec=fast", "want a positive number"},
		{"no markers", "", "", "", "no headline markers"},
	} {
		t.Run(c.name, func(t *testing.T) {
			readme, dir := copyResults(t)
			if col, v, ok := strings.Cut(c.to, "+"); ok && c.file != "" {
				c.from, c.to = editCell(t, filepath.Join(dir, c.file), c.from, col, func(old float64) string {
					d, _ := strconv.ParseFloat(v, 64)
					return strconv.FormatFloat(old+d, 'f', 2, 64)
				})
			} else if col, v, ok := strings.Cut(c.to, "="); ok && c.file != "" {
				c.from, c.to = editCell(t, filepath.Join(dir, c.file), c.from, col, func(float64) string { return v })
			}
			if c.file != "" {
				edit(t, filepath.Join(dir, c.file), c.from, c.to)
			} else {
				edit(t, readme, headlineEnd, "<!-- gone -->")
			}
			before, _ := os.ReadFile(readme)
			_, err := updateReadme(readme, dir, false)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("err %v, want one saying %q", err, c.want)
			}
			if after, _ := os.ReadFile(readme); string(after) != string(before) {
				t.Errorf("the README changed on an error:\n%s", after)
			}
		})
	}
}

func TestReplaceHeadlineMarkers(t *testing.T) {
	b, e := headlineBegin+"\n", headlineEnd+"\n"
	for _, doc := range []string{
		"x\n" + e + b,      // end before begin
		b + b + e,          // two begins
		b + e + e,          // two ends
		"x " + b + e,       // begin not on a line of its own
		"nothing at all\n", // none
	} {
		if _, err := replaceHeadline(doc, "t\n"); err == nil {
			t.Errorf("%q: no error", doc)
		}
	}
	got, err := replaceHeadline("a\n"+b+"old\nold\n"+e+"z\n", "t\n")
	if want := "a\n" + b + "t\n" + e + "z\n"; err != nil || got != want {
		t.Errorf("got %q, %v; want %q", got, err, want)
	}
}

// TestFormatMetric: each shown number parses back within its rounding.
func TestFormatMetric(t *testing.T) {
	for _, tc := range []struct {
		metric string
		v      float64
		want   string
	}{
		{"p50_us", 0.7285, "0.73 µs"},
		{"p50_us", 36.2, "36.2 µs"},
		{"join_p50_us", 34505.948, "34506 µs"},
		{"ops_per_sec", 173807, "173.8 k ops/s"},
		{"ops_per_sec", 1.5e6, "1.50 M ops/s"},
	} {
		got := formatMetric(tc.metric, tc.v)
		if got != tc.want {
			t.Errorf("formatMetric(%s, %v) = %q, want %q", tc.metric, tc.v, got, tc.want)
		}
		s, err := parseShown(got)
		if err != nil || math.Abs(s.v-tc.v) > s.tol {
			t.Errorf("%q parses as %v ± %v (%v), want %v", got, s.v, s.tol, err, tc.v)
		}
	}
}

// editCell finds the line of a results CSV that starts with prefix and
// returns it, and the same line with column col set to set(its value):
// the bad inputs are made from whatever the CSVs hold now.
func editCell(t *testing.T, file, prefix, col string, set func(old float64) string) (from, to string) {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var cols []string
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Split(line, ",")
		switch {
		case strings.HasPrefix(line, "system,"):
			cols = f
		case strings.HasPrefix(line, prefix) && cols != nil:
			for i, c := range cols {
				if c == col && i < len(f) {
					v, err := strconv.ParseFloat(f[i], 64)
					if err != nil {
						t.Fatalf("%s: %s of %s is %q", file, col, prefix, f[i])
					}
					f[i] = set(v)
					return line, strings.Join(f, ",")
				}
			}
		}
	}
	t.Fatalf("%s: no line %q... with a %s column", file, prefix, col)
	return "", ""
}
