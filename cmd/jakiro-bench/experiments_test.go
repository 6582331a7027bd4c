package main

import (
	"testing"

	"github.com/urfave/cli/v2"
)

// TestClientProcs: go-ycsb comparisons run at the machine's GOMAXPROCS
// unless --client-procs is given; the other experiments at the flag's.
func TestClientProcs(t *testing.T) {
	for _, tc := range []struct {
		exp  string
		args []string
		want int
	}{
		{"comparetcp", nil, startProcs},
		{"compare", nil, startProcs},
		{"comparetcp", []string{"--client-procs", "3"}, 3},
		{"window", nil, 1},
		{"onebyone", nil, startProcs},
		{"join", []string{"--client-procs", "1"}, 1},
		{"callers", []string{"--client-procs", "2"}, 2},
	} {
		got := -1
		app := &cli.App{Flags: commonFlags(), Action: func(c *cli.Context) error {
			got = clientProcs(c, experiment{Name: tc.exp})
			return nil
		}}
		if err := app.Run(append([]string{"jakiro-bench"}, tc.args...)); err != nil {
			t.Fatal(err)
		}
		if got != tc.want {
			t.Errorf("%s %v: GOMAXPROCS %d, want %d", tc.exp, tc.args, got, tc.want)
		}
	}
}
