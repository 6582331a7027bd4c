package main

import (
	"errors"
	"fmt"
	"os"
	"runtime/pprof"
	"runtime/trace"

	"github.com/urfave/cli/v2"
)

// cpuProfileFlag and traceFlag profile the load generator (this process,
// not the servers it starts): where a client spends its time, and how
// its goroutines share the Ps, is the question most benchmark runs end
// with.
var (
	cpuProfileFlag = &cli.StringFlag{Name: "cpuprofile", EnvVars: []string{"JAKIRO_BENCH_CPUPROFILE"},
		Usage: "write a CPU profile of this process (the load generator) to `FILE`"}
	traceFlag = &cli.StringFlag{Name: "trace", EnvVars: []string{"JAKIRO_BENCH_TRACE"},
		Usage: "write an execution trace of this process (go tool trace) to `FILE`"}
)

var profileFile, traceFile *os.File

func startProfile(c *cli.Context) error {
	if path := c.String(cpuProfileFlag.Name); path != "" {
		f, err := os.Create(path)
		if err != nil {
			return fmt.Errorf("cpuprofile: %w", err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			f.Close()
			return fmt.Errorf("cpuprofile: %w", err)
		}
		profileFile = f
	}
	if path := c.String(traceFlag.Name); path != "" {
		f, err := os.Create(path)
		if err != nil {
			return fmt.Errorf("trace: %w", err)
		}
		if err := trace.Start(f); err != nil {
			f.Close()
			return fmt.Errorf("trace: %w", err)
		}
		traceFile = f
	}
	return nil
}

func stopProfile(*cli.Context) error {
	var errs []error
	if profileFile != nil {
		pprof.StopCPUProfile()
		errs = append(errs, profileFile.Close())
		profileFile = nil
	}
	if traceFile != nil {
		trace.Stop()
		errs = append(errs, traceFile.Close())
		traceFile = nil
	}
	return errors.Join(errs...)
}
