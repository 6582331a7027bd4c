#!/bin/bash
# RFP vs server-reply vs hybrid over real verbs on soft-RoCE (rdma_rxe) in a
# QEMU/TCG VM: runs the server package's benchmarks there and writes
# results/rdma_softroce.csv and results/rdma_softroce.md. EMULATION: the CPU
# is emulated and rxe is a software NIC; compare the modes with each other,
# never with hardware numbers.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
OUT=${OUT:-$ROOT/results}
LOG=$(mktemp /tmp/jakiro-rdma-results.XXXXXX.log)
trap 'rm -f "$LOG"' EXIT
RDMA_TEST_PKGS=./server RDMA_BENCH_PKGS="./server ./fabric/verbs" RDMA_BENCHTIME=${RDMA_BENCHTIME:-2000x} \
  RXE_LOG="$LOG" "$HERE/test-rdma.sh" -test.run='^$' >/dev/null
mkdir -p "$OUT"
csv=$OUT/rdma_softroce.csv
{
  echo "# Jakiro over verbs on soft-RoCE (rdma_rxe) inside a QEMU/TCG VM: EMULATION, not hardware."
  echo "# host: $(hostname), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores; VM: 2 vCPUs (TCG), 1.5 GiB"
  echo "# commit: $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown), date: $(date -u +%FT%TZ)"
  echo "# produced by scripts/rxe-vm/rdma-results.sh (server BenchmarkGet, BenchmarkLatency; window 8, 1 partition, 16 B keys, 32 B values)"
  echo "benchmark,mode,mops,fabric_ops_per_op,retries_per_op,p50_us,p99_us"
  tr -d '\r' < "$LOG" | awk '
    /^Benchmark(Get|Latency)\/rdma\// {
      split($1, p, "/"); mode = p[3]; sub(/-[0-9]+$/, "", mode); bench = p[1]; sub(/^Benchmark/, "", bench)
      m = ""; f = ""; r = ""; p50 = ""; p99 = ""
      for (i = 2; i < NF; i++) {
        if ($(i+1) == "Mops") m = $i; if ($(i+1) == "fabricops/op") f = $i; if ($(i+1) == "retries/op") r = $i
        if ($(i+1) == "p50-µs") p50 = $i; if ($(i+1) == "p99-µs") p99 = $i
        if ($(i+1) == "Mrt/s") m = $i
      }
      printf "%s,%s,%s,%s,%s,%s,%s\n", bench, mode, m, f, r, p50, p99
    }'
} > "$csv"
{
  echo "# RFP vs server-reply vs hybrid on soft-RoCE — EMULATION"
  echo
  echo "Soft-RoCE (\`rdma_rxe\`) inside a QEMU VM with an emulated (TCG) CPU: a software NIC on"
  echo "an emulated CPU. The numbers compare the modes with each other; they say nothing about"
  echo "hardware RDMA. Source: \`rdma_softroce.csv\`, made by \`scripts/rxe-vm/rdma-results.sh\`."
  echo
  echo "| benchmark | mode | Mops | fabric ops/op | retries/op | p50 µs | p99 µs |"
  echo "|---|---|---|---|---|---|---|"
  grep -v '^#' "$csv" | tail -n +2 | awk -F, '{printf "| %s | %s | %s | %s | %s | %s | %s |\n", $1, $2, $3, $4, $5, $6, $7}'
  echo
  grep '^#' "$csv" | sed 's/^# /- /'
} > "$OUT/rdma_softroce.md"
cat "$OUT/rdma_softroce.md"
