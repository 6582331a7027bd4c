package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/urfave/cli/v2"
)

// The README's headline table lives between these two lines; `jakiro-bench
// readme` rewrites what is between them and nothing else.
const (
	headlineBegin = "<!-- headline: begin (written by `jakiro-bench readme` from results/*.csv; edit cmd/jakiro-bench/headline.go) -->"
	headlineEnd   = "<!-- headline: end -->"
)

// errStale: --check found a table the CSVs no longer give.
var errStale = errors.New("the headline table differs from the CSVs: run `make figures` or `jakiro-bench readme`")

func readmeCommand() *cli.Command {
	return &cli.Command{
		Name:  "readme",
		Usage: "rewrite README.md's headline table from the CSVs in --results (reads CSVs only, measures nothing)",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "results", Value: "results", Usage: "directory of the CSVs"},
			&cli.StringFlag{Name: "readme", Value: "README.md", Usage: "the file holding the table between its marker lines"},
			&cli.BoolFlag{Name: "check", Usage: "change nothing; fail if the table is not what the CSVs give"},
		},
		Action: func(c *cli.Context) error {
			changed, err := updateReadme(c.String("readme"), c.String("results"), c.Bool("check"))
			switch {
			case err != nil:
				return err
			case changed:
				fmt.Printf("%s: headline table rewritten from %s\n", c.String("readme"), c.String("results"))
			default:
				fmt.Printf("%s: headline table up to date with %s\n", c.String("readme"), c.String("results"))
			}
			return nil
		},
	}
}

// updateReadme puts the headline table from the CSVs in dir into the
// README at file and says whether it changed anything. With check it
// writes nothing and fails with errStale on a difference. A CSV that
// lacks a row, or markers that are missing, leave the file as it was.
func updateReadme(file, dir string, check bool) (bool, error) {
	old, err := os.ReadFile(file)
	if err != nil {
		return false, err
	}
	// The table links the CSVs relative to the README, however the two
	// paths were given.
	absFile, err := filepath.Abs(file)
	if err != nil {
		return false, err
	}
	absDir, err := filepath.Abs(dir)
	if err != nil {
		return false, err
	}
	link, err := filepath.Rel(filepath.Dir(absFile), absDir)
	if err != nil {
		return false, err
	}
	table, err := headlineTable(dir, filepath.ToSlash(link))
	if err != nil {
		return false, err
	}
	doc, err := replaceHeadline(string(old), table)
	if err != nil {
		return false, fmt.Errorf("%s: %w", file, err)
	}
	if doc == string(old) {
		return false, nil
	}
	if check {
		return true, fmt.Errorf("%s: %w", file, errStale)
	}
	// A new file renamed over the old: a reader never sees half a README.
	st, err := os.Stat(file)
	if err != nil {
		return false, err
	}
	tmp, err := os.CreateTemp(filepath.Dir(file), ".readme-*")
	if err != nil {
		return false, err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.WriteString(doc); err != nil {
		tmp.Close()
		return false, err
	}
	if err := tmp.Chmod(st.Mode().Perm()); err != nil {
		tmp.Close()
		return false, err
	}
	if err := tmp.Close(); err != nil {
		return false, err
	}
	return true, os.Rename(tmp.Name(), file)
}

// replaceHeadline puts table between doc's marker lines, each of which
// must appear once, on a line of its own, begin before end.
func replaceHeadline(doc, table string) (string, error) {
	lines := strings.SplitAfter(doc, "\n")
	begin, end := -1, -1
	for i, l := range lines {
		switch strings.TrimRight(l, "\r\n") {
		case headlineBegin:
			if begin >= 0 {
				return "", fmt.Errorf("line %d: a second headline begin marker", i+1)
			}
			begin = i
		case headlineEnd:
			if end >= 0 {
				return "", fmt.Errorf("line %d: a second headline end marker", i+1)
			}
			end = i
		}
	}
	switch {
	case begin < 0 || end < 0:
		return "", fmt.Errorf("no headline markers (want the lines %q and %q)", headlineBegin, headlineEnd)
	case end < begin:
		return "", fmt.Errorf("the headline end marker (line %d) comes before its begin (line %d)", end+1, begin+1)
	}
	return strings.Join(lines[:begin+1], "") + table + strings.Join(lines[end:], ""), nil
}

// readmeHeadline is the table between doc's markers, as written.
func readmeHeadline(doc string) (string, error) {
	_, rest, ok := strings.Cut(doc, headlineBegin+"\n")
	table, _, ok2 := strings.Cut(rest, headlineEnd)
	if !ok || !ok2 {
		return "", errors.New("no headline markers")
	}
	return table, nil
}
