package main

import (
	"errors"
	"fmt"
	"io"
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
	var err error
	if profileFile, err = startTo(c.String(cpuProfileFlag.Name), "cpuprofile", pprof.StartCPUProfile); err != nil {
		return err
	}
	traceFile, err = startTo(c.String(traceFlag.Name), "trace", trace.Start)
	return err
}

// startTo creates path (if set) and starts writing to it; nil if unset.
func startTo(path, what string, start func(io.Writer) error) (*os.File, error) {
	if path == "" {
		return nil, nil
	}
	f, err := os.Create(path)
	if err == nil {
		if err = start(f); err != nil {
			f.Close()
		}
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return f, nil
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
