package main

import (
	"encoding/csv"
	"fmt"
	"math"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
)

// headline is one line of the README's headline table: Jakiro and a peer
// measured in the same run (two rows of one CSV), and the ratio that
// CSV's Jakiro row gives. Every number the line shows is a cell of the
// CSV, rounded, so the table cannot say what results/ does not.
type headline struct {
	What   string // the measurement, as the table names it
	File   string // the CSV, relative to the results directory
	Jakiro string // Jakiro's row: "column=value" pairs, space-separated
	Peer   string // the peer, as the table names it
	Of     string // the peer's row, as Jakiro
	Metric string // the column both numbers come from
	Ratio  string // the column of Jakiro's row that holds Jakiro / peer
}

// headlines: how fast, against what, on what machine. A row whose CSV
// has no ratio column for its peer does not belong here: its ratio would
// be a number no CSV holds.
var headlines = []headline{
	{"go-ycsb 95% GET zipfian, shm, 4 threads", "compare.csv", "system=jakiro-defaults threads=4", "Redis", "system=redis threads=4", "ops_per_sec", "vs_redis"},
	{"the same", "compare.csv", "system=jakiro-defaults threads=4", "memcached", "system=memcached threads=4", "ops_per_sec", "vs_memcached"},
	{"the same, 64 threads", "compare.csv", "system=jakiro-defaults threads=64", "Redis", "system=redis threads=64", "ops_per_sec", "vs_redis"},
	{"the same, 16 threads", "bigger/compare.csv", "system=jakiro-defaults threads=16", "memcached -t 8", "system=memcached threads=16", "ops_per_sec", "vs_memcached"},
	{"go-ycsb 95% GET zipfian, loopback tcp, 1 thread", "compare_tcp.csv", "system=jakiro-tcp threads=1", "Redis", "system=redis threads=1", "ops_per_sec", "vs_redis"},
	{"the same, 4 threads", "compare_tcp.csv", "system=jakiro-tcp threads=4", "Redis", "system=redis threads=4", "ops_per_sec", "vs_redis"},
	{"memcached door, go-ycsb 95% GET, 1 partition", "door.csv", "system=jakiro-door-p1", "memcached -t 1", "system=memcached-t1", "ops_per_sec", "ops_vs_memcached"},
	{"the same, p50 latency", "door.csv", "system=jakiro-door-p1", "memcached -t 1", "system=memcached-t1", "p50_us", "p50_vs_memcached"},
	{"one GET at a time, shm, p50 (auto mode)", "onebyone.csv", "fabric=shm system=auto", "echo floor", "fabric=shm system=echo", "p50_us", "p50_vs_echo"},
	{"256 processes join at once, shm, p50 Dial + GET", "join.csv", "system=jakiro fabric=shm", "memcached connect + get", "system=memcached", "join_p50_us", "p50_vs_memcached"},
}

// headlineHeader is the table's head; the test reads the rows by it.
const headlineHeader = "| measurement | Jakiro | peer | peer, same run | Jakiro / peer | machine | commit, date | data |\n" +
	"|---|---|---|---|---|---|---|---|\n"

// resultsCSV is one CSV of results/: its '#' block as key: value, its
// columns and its rows.
type resultsCSV struct {
	Path string
	Meta map[string]string
	Cols []string
	Rows [][]string
}

func readResultsCSV(file string) (*resultsCSV, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	t := &resultsCSV{Path: file, Meta: map[string]string{}}
	for _, l := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(strings.TrimPrefix(l, "# "), ": "); ok && strings.HasPrefix(l, "# ") {
			if _, dup := t.Meta[k]; !dup {
				t.Meta[k] = v
			}
		}
	}
	r := csv.NewReader(strings.NewReader(string(b)))
	r.Comment = '#'
	rows, err := r.ReadAll()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("%s: no column header", file)
	}
	t.Cols, t.Rows = rows[0], rows[1:]
	return t, nil
}

// col is the index of column name.
func (t *resultsCSV) col(name string) (int, error) {
	for i, c := range t.Cols {
		if c == name {
			return i, nil
		}
	}
	return 0, fmt.Errorf("%s: no column %q", t.Path, name)
}

// row is the one row whose columns hold the values "where" names.
func (t *resultsCSV) row(where string) ([]string, error) {
	type cond struct {
		i int
		v string
	}
	var conds []cond
	for _, kv := range strings.Fields(where) {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return nil, fmt.Errorf("row %q: %q is not column=value", where, kv)
		}
		i, err := t.col(k)
		if err != nil {
			return nil, err
		}
		conds = append(conds, cond{i, v})
	}
	var found []string
	n := 0
rows:
	for _, r := range t.Rows {
		for _, c := range conds {
			if c.i >= len(r) || r[c.i] != c.v {
				continue rows
			}
		}
		found, n = r, n+1
	}
	if n != 1 {
		return nil, fmt.Errorf("%s: %d rows with %s, want 1", t.Path, n, where)
	}
	return found, nil
}

// number is the float in column name of row r.
func (t *resultsCSV) number(r []string, name string) (float64, error) {
	i, err := t.col(name)
	if err != nil {
		return 0, err
	}
	v, err := strconv.ParseFloat(r[i], 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) || v <= 0 {
		return 0, fmt.Errorf("%s: column %s is %q, want a positive number", t.Path, name, r[i])
	}
	return v, nil
}

// machine, commit and day say where and when the CSV's run was, from its
// '#' block.
func (t *resultsCSV) machine() (string, error) {
	cores, cpu := t.Meta["cores"], t.Meta["cpu"]
	if cores == "" || cpu == "" {
		return "", fmt.Errorf("%s: no '# cores:' or '# cpu:' line", t.Path)
	}
	cpu = strings.Join(strings.Fields(strings.NewReplacer("(R)", "", "(TM)", "", "Processor", "", "CPU", "").Replace(cpu)), " ")
	return cores + "-core " + cpu, nil
}

func (t *resultsCSV) commitDate() (string, error) {
	commit, _, _ := strings.Cut(t.Meta["commit"], " ")
	date, _, _ := strings.Cut(t.Meta["date"], "T")
	if commit == "" || len(date) != len("2006-01-02") {
		return "", fmt.Errorf("%s: no '# commit:' or '# date:' line", t.Path)
	}
	return "`" + commit + "` " + date, nil
}

// formatMetric shows a metric's value: throughput in k or M ops/s to
// four significant digits, latency in µs to a tenth (a hundredth under
// 10 µs, a unit from 1000 µs).
func formatMetric(metric string, v float64) string {
	switch {
	case strings.HasSuffix(metric, "_us") && v < 10:
		return strconv.FormatFloat(v, 'f', 2, 64) + " µs"
	case strings.HasSuffix(metric, "_us") && v >= 1000:
		return strconv.FormatFloat(v, 'f', 0, 64) + " µs"
	case strings.HasSuffix(metric, "_us"):
		return strconv.FormatFloat(v, 'f', 1, 64) + " µs"
	case v >= 1e6:
		return strconv.FormatFloat(v/1e6, 'f', 2, 64) + " M ops/s"
	case v >= 1e3:
		return strconv.FormatFloat(v/1e3, 'f', 1, 64) + " k ops/s"
	}
	return strconv.FormatFloat(v, 'f', 1, 64) + " ops/s"
}

// line is h's row of the table, from the CSVs in dir; link is dir as the
// README links it.
func (h headline) line(dir, link string, csvs map[string]*resultsCSV) (string, error) {
	t := csvs[h.File]
	if t == nil {
		var err error
		if t, err = readResultsCSV(filepath.Join(dir, filepath.FromSlash(h.File))); err != nil {
			return "", err
		}
		csvs[h.File] = t
	}
	jr, err := t.row(h.Jakiro)
	if err != nil {
		return "", err
	}
	pr, err := t.row(h.Of)
	if err != nil {
		return "", err
	}
	j, err := t.number(jr, h.Metric)
	if err != nil {
		return "", err
	}
	p, err := t.number(pr, h.Metric)
	if err != nil {
		return "", err
	}
	ri, err := t.col(h.Ratio)
	if err != nil {
		return "", err
	}
	ratio, err := strconv.ParseFloat(jr[ri], 64)
	if err != nil {
		return "", fmt.Errorf("%s: %s of %s is %q, want a number", t.Path, h.Ratio, h.Jakiro, jr[ri])
	}
	// The ratio column must be these two medians' ratio (to its two
	// decimals): otherwise the rows picked are not the ones it compares.
	if math.Abs(ratio-j/p) > 0.0051 {
		return "", fmt.Errorf("%s: %s of %s is %s, but %s %.4g / %.4g = %.4f: not the rows it compares",
			t.Path, h.Ratio, h.Jakiro, jr[ri], h.Metric, j, p, j/p)
	}
	m, err := t.machine()
	if err != nil {
		return "", err
	}
	cd, err := t.commitDate()
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("| %s | %s | %s | %s | %s× | %s | %s | [%s](%s) |", h.What, formatMetric(h.Metric, j), h.Peer,
		formatMetric(h.Metric, p), jr[ri], m, cd, h.File, path.Join(link, h.File)), nil
}

// headlineTable is the README's headline table, from the CSVs in dir
// (linked from the README as link).
func headlineTable(dir, link string) (string, error) {
	var b strings.Builder
	b.WriteString(headlineHeader)
	csvs := map[string]*resultsCSV{}
	for _, h := range headlines {
		l, err := h.line(dir, link, csvs)
		if err != nil {
			return "", err
		}
		b.WriteString(l + "\n")
	}
	return b.String(), nil
}
