package main

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/magiconair/properties"
	"github.com/urfave/cli/v2"

	_ "github.com/pingcap/go-ycsb/db/redis" // registers "redis"

	"github.com/jakiro-kv/jakiro/ycsb" // registers "jakiro" and "memcached"
)

// ycsbCommand: `jakiro-bench ycsb load|run DB -P file -p k=v`, go-ycsb's
// command line, run in this process.
func ycsbCommand() *cli.Command {
	flags := []cli.Flag{
		&cli.StringSliceFlag{Name: "P", Usage: "workload property file (repeatable)"},
		&cli.StringSliceFlag{Name: "p", Usage: "property name=value (repeatable)"},
		&cli.IntFlag{Name: "threads", Usage: "go-ycsb threads (threadcount property)"},
		&cli.DurationFlag{Name: "duration", Value: 10 * time.Second, Usage: "bound on the run phase"},
		&cli.IntFlag{Name: "procs", Usage: "GOMAXPROCS of this process (0: unchanged)"},
	}
	phase := func(load bool) *cli.Command {
		name, usage := "run", "run the workload's operations"
		if load {
			name, usage = "load", "insert the workload's records"
		}
		return &cli.Command{
			Name: name, Usage: usage, ArgsUsage: "DB (jakiro, redis, memcached)", Flags: flags,
			Action: func(c *cli.Context) error {
				if c.NArg() != 1 {
					return fmt.Errorf("ycsb %s: want one database name (jakiro, redis, memcached)", name)
				}
				if n := c.Int("procs"); n > 0 {
					runtime.GOMAXPROCS(n)
				}
				p, err := loadProps(c.StringSlice("P"), c.StringSlice("p"))
				if err != nil {
					return err
				}
				if n := c.Int("threads"); n > 0 {
					p.Set("threadcount", fmt.Sprint(n))
				}
				r, err := ycsb.Run(c.Context, ycsb.RunConfig{DB: c.Args().First(), Props: p, Load: load,
					Duration: c.Duration("duration"), Progress: os.Stderr})
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
