package main

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/magiconair/properties"
	"github.com/urfave/cli/v2"

	_ "github.com/pingcap/go-ycsb/db/basic" // registers "basic", a no-op database
	_ "github.com/pingcap/go-ycsb/db/redis" // registers "redis"

	"github.com/jakiro-kv/jakiro/ycsb" // registers "jakiro" and "memcached"
)

// ycsbCommand: `jakiro-bench ycsb load|run DB -P file -p k=v`, go-ycsb's
// command line (flags after the database name, as go-ycsb takes them), run
// in this process.
func ycsbCommand() *cli.Command {
	const usage = "DB [-P workload-file]... [-p name=value]... [--threads N] [--duration 10s] [--procs N]"
	phase := func(load bool) *cli.Command {
		name, desc := "run", "run the workload's operations"
		if load {
			name, desc = "load", "insert the workload's records"
		}
		return &cli.Command{
			Name: name, Usage: desc + " (DB: jakiro, redis, memcached)", ArgsUsage: usage,
			// go-ycsb puts flags after the positional database name,
			// which urfave/cli does not parse: parse them here.
			SkipFlagParsing: true,
			Action: func(c *cli.Context) error {
				a, err := parseYCSBArgs(c.Args().Slice())
				if err != nil {
					return fmt.Errorf("ycsb %s: %w\nusage: jakiro-bench ycsb %s %s", name, err, name, usage)
				}
				if a.procs > 0 {
					runtime.GOMAXPROCS(a.procs)
				}
				p, err := loadProps(a.files, a.props)
				if err != nil {
					return err
				}
				if a.threads > 0 {
					p.Set("threadcount", fmt.Sprint(a.threads))
				}
				r, err := ycsb.Run(c.Context, ycsb.RunConfig{DB: a.db, Props: p, Load: load,
					Duration: a.duration, Progress: os.Stderr})
				if err != nil {
					return err
				}
				r.Summary(os.Stdout)
				return nil
			},
		}
	}
	return &cli.Command{
		Name:        "ycsb",
		Usage:       "go-ycsb load|run in process with the jakiro, memcached and redis drivers",
		Subcommands: []*cli.Command{phase(true), phase(false)},
	}
}

type ycsbArgs struct {
	db             string
	files, props   []string
	threads, procs int
	duration       time.Duration
}

func parseYCSBArgs(args []string) (ycsbArgs, error) {
	a := ycsbArgs{duration: 10 * time.Second}
	for i := 0; i < len(args); i++ {
		arg := args[i]
		name, val, hasVal := strings.Cut(strings.TrimLeft(arg, "-"), "=")
		if !strings.HasPrefix(arg, "-") {
			if a.db != "" {
				return a, fmt.Errorf("two databases: %s and %s", a.db, arg)
			}
			a.db = arg
			continue
		}
		if !hasVal {
			if i+1 >= len(args) {
				return a, fmt.Errorf("%s needs a value", arg)
			}
			i++
			val = args[i]
		}
		var err error
		switch name {
		case "P", "property_file":
			a.files = append(a.files, val)
		case "p", "prop":
			a.props = append(a.props, val)
		case "threads":
			a.threads, err = strconv.Atoi(val)
		case "procs":
			a.procs, err = strconv.Atoi(val)
		case "duration":
			a.duration, err = time.ParseDuration(val)
		default:
			return a, fmt.Errorf("unknown flag %s", arg)
		}
		if err != nil {
			return a, fmt.Errorf("%s: %w", arg, err)
		}
	}
	if a.db == "" {
		return a, fmt.Errorf("no database named")
	}
	return a, nil
}

// loadProps reads property files, then name=value overrides, as go-ycsb does.
func loadProps(files, kvs []string) (*properties.Properties, error) {
	p := properties.NewProperties()
	if len(files) > 0 {
		var err error
		if p, err = properties.LoadFiles(files, properties.UTF8, false); err != nil {
			return nil, err
		}
	}
	for _, kv := range kvs {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return nil, fmt.Errorf("property %q: want name=value", kv)
		}
		p.Set(k, v)
	}
	return p, nil
}
