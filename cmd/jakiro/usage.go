package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/urfave/cli/v2"
	"github.com/xrash/smetrics"
)

// usageError replaces urfave/cli's "Incorrect Usage" and full help page
// with one line that names the command, the closest flag to a mistyped
// one, and where the help is.
func usageError(c *cli.Context, err error, _ bool) error {
	if c.Command == nil || c.Command.Name == "" || c.Command.Name == c.App.Name {
		return cli.Exit(fmt.Sprintf("jakiro: %v: flags go after the command, as in `jakiro get KEY --addr URL` (see `jakiro --help`)", err), exitError)
	}
	name := "jakiro " + c.Command.Name
	msg := fmt.Sprintf("%s: %v", name, err)
	if flag, ok := strings.CutPrefix(err.Error(), "flag provided but not defined: -"); ok {
		var names []string
		for _, f := range c.Command.Flags {
			names = append(names, f.Names()...)
		}
		if s := closest(strings.TrimPrefix(flag, "-"), names); s != "" {
			msg += "; did you mean --" + s + "?"
		}
	}
	return cli.Exit(fmt.Sprintf("%s (see `%s --help`)", msg, name), exitError)
}

func commandNotFound(c *cli.Context, name string) {
	msg := fmt.Sprintf("jakiro: no command %q", name)
	var names []string
	for _, cmd := range c.App.Commands {
		names = append(names, cmd.Names()...)
	}
	if s := closest(name, names); s != "" {
		msg += "; did you mean " + s + "?"
	}
	fmt.Fprintf(os.Stderr, "%s (commands: server, put, get, del, stats; see `jakiro --help`)\n", msg)
	os.Exit(exitError)
}

// closest is the candidate most like s, "" if none is close enough to
// be what was meant (Jaro-Winkler similarity, as urfave/cli suggests).
func closest(s string, candidates []string) string {
	best, score := "", 0.8
	for _, c := range candidates {
		if d := smetrics.JaroWinkler(s, c, 0.7, 4); d > score {
			best, score = c, d
		}
	}
	return best
}
