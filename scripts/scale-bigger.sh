#!/usr/bin/env bash
# Runs the scale checks on a bigger machine from static binaries, with
# nothing fetched at run time:
#
#   make static-bench                      # here: bin/static/jakiro-bench (CGO_ENABLED=0)
#   scripts/scale-bigger.sh bin/static results/bigger
#
# It writes, into the results directory (CSV + PNG, the machine in each
# CSV's header):
#   callers  the 2-core bars on two of the machine's cores (taskset -c 0,1):
#            Get from 64 and 1,024 goroutines in one process, own
#            connections and one shared Client, GOMAXPROCS 1 and 2
#   scale    the paper's shape: N load processes x C connections x window
#            W against 1..8 partitions, and the same load from one process
#            at GOMAXPROCS N (own connections, one shared Client)
#   compare  go-ycsb 95/5 zipfian at 16 and 64 threads against the server
#            at its defaults, memcached -t 8 and go-ycsb's no-op database,
#            go-ycsb at GOMAXPROCS = the machine's cores (its default)
# and, in tuned/, scale and compare again with the load process at
# GOMAXPROCS N and N poll groups (JAKIRO_POLL_GROUPS).
# memcached is optional: put it (and the libraries it needs) in the binary
# directory, or on PATH; without it compare runs without that row.
# Environment: REPS (default 3), DURATION (default 1s), PARTS (scale's
# partition counts, default 1,2,4,8), PROCS (scale's N, default 8).
set -euo pipefail
bin=${1:-bin/static}
res=${2:-results/bigger}
bin=$(cd "$bin" && pwd)
mkdir -p "$res"
export PATH="$bin:$PATH" LD_LIBRARY_PATH="$bin${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
b="$bin/jakiro-bench"
reps=${REPS:-3}
dur=${DURATION:-1s}
common=(--out "$res" --reps "$reps" --duration "$dur" --warmup 300ms --quiet-wait 5s)
echo "== $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2)"
taskset -c 0,1 "$b" callers "${common[@]}"
"$b" scale "${common[@]}" --scale-partitions "${PARTS:-1,2,4,8}" --scale-procs "${PROCS:-8}" --scale-loads 8x1,1x8
systems=jakiro-defaults,noop
if command -v memcached >/dev/null && memcached -h >/dev/null 2>&1; then
	systems=jakiro-defaults,memcached,noop
else
	echo "memcached not found or not runnable here: compare runs without it"
fi
"$b" compare "${common[@]}" --client-procs "$(nproc)" --compare-systems "$systems" --ycsb-threads 16,64 --ext-threads 8
# Tuned, beside the defaults: the load process at GOMAXPROCS = the cores
# left to it, with as many poll groups (JAKIRO_POLL_GROUPS; the default,
# half the Ps, leaves room for a server on the same cores).
n=${PROCS:-8}
mkdir -p "$res/tuned"
tuned=(--out "$res/tuned" --reps "$reps" --duration "$dur" --warmup 300ms --quiet-wait 5s)
JAKIRO_POLL_GROUPS=$n "$b" scale "${tuned[@]}" --scale-partitions 8 --scale-procs "$n" --scale-loads 8x1,1x8
JAKIRO_POLL_GROUPS=$n "$b" compare "${tuned[@]}" --client-procs "$n" --compare-systems jakiro-defaults --ycsb-threads 16,64
