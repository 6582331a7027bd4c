package main

import (
	"strings"

	"github.com/urfave/cli/v2"
)

// flagsFirst rewrites a command line so a leaf command's flags may come
// after its arguments (`jakiro put k v --ttl 1`): urfave/cli v2 stops
// parsing flags at the first argument, so the command's flags (with their
// values) are moved before its arguments, and "--" is put between them.
// Everything after a "--" the user typed stays an argument, so values
// starting with "-" still work (`jakiro put k -- -5`). Command lines of
// unknown commands, or of commands that parse their own flags, are
// returned as they are.
func flagsFirst(app *cli.App, args []string) []string {
	// args[0] is the program; global flags come before the command.
	i := 1 + flagRun(app.Flags, args[1:])
	if i >= len(args) {
		return args
	}
	cmd := app.Command(args[i])
	if cmd == nil || cmd.Name == "help" || cmd.SkipFlagParsing || len(cmd.Subcommands) > 0 {
		return args
	}
	var flags, pos []string
	rest := args[i+1:]
	for j := 0; j < len(rest); j++ {
		a := rest[j]
		switch {
		case a == "--":
			pos = append(pos, rest[j+1:]...)
			j = len(rest)
		case isFlag(a):
			flags = append(flags, a)
			if takesValue(cmd.Flags, a) && j+1 < len(rest) {
				j++
				flags = append(flags, rest[j])
			}
		default:
			pos = append(pos, a)
		}
	}
	out := append(append([]string(nil), args[:i+1]...), flags...)
	if len(pos) > 0 {
		out = append(append(out, "--"), pos...)
	}
	return out
}

// flagRun is how many leading args are flags (and their values).
func flagRun(defs []cli.Flag, args []string) int {
	n := 0
	for n < len(args) && isFlag(args[n]) && args[n] != "--" {
		if takesValue(defs, args[n]) {
			n++
		}
		n++
	}
	return min(n, len(args))
}

// isFlag: "-x", "--name", "--name=v"; a lone "-" is an argument (stdin).
func isFlag(a string) bool { return len(a) > 1 && a[0] == '-' }

// takesValue: a flag among defs, given without "=value", that takes its
// value from the next argument. Unknown flags take none: the parser then
// names them.
func takesValue(defs []cli.Flag, a string) bool {
	name := strings.TrimLeft(a, "-")
	if strings.Contains(name, "=") {
		return false
	}
	for _, f := range defs {
		for _, n := range f.Names() {
			if n == name {
				v, ok := f.(cli.DocGenerationFlag)
				return ok && v.TakesValue()
			}
		}
	}
	return false
}
