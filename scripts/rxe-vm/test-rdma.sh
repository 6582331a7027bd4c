#!/bin/bash
# Jakiro's RDMA tests, for real, on a machine without an RDMA NIC: builds
# `go test -c -tags rdma` binaries on the host and runs them in ONE throwaway
# QEMU VM whose (Debian) kernel provides soft-RoCE rxe0 on 192.168.77.1.
#
# usage: scripts/rxe-vm/test-rdma.sh [TEST BINARY ARGS...]   e.g. -test.run=PeerClose
# Env:
#   RDMA_TEST_PKGS   packages to test          (default: ./fabric/verbs)
#   RDMA_BENCH_PKGS  packages to benchmark     (default: ./fabric/verbs; "" for none)
#   RDMA_BENCHTIME   -test.benchtime for those (default: 300ms; TCG is slow)
#   RDMA_STRESS      `jakiro-bench stress` duration over rdma:// against a real
#                    `jakiro server` (scripts/stress.sh; default: 5s; "" for none)
#   RDMA_VM_TIMEOUT  seconds for the whole VM  (default: 600)
#   RXE_LOG          where the VM console log is kept (default: scripts/rxe-vm/cache/test-rdma.log)
# Exits non-zero if any package fails, a benchmark fails, or rxe0 is missing in the VM.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
PKGS=${RDMA_TEST_PKGS:-./fabric/verbs}
BENCH_PKGS=${RDMA_BENCH_PKGS-./fabric/verbs}
BENCHTIME=${RDMA_BENCHTIME:-300ms}
export RXE_CACHE=${RXE_CACHE:-$HERE/cache}
mkdir -p "$RXE_CACHE"
export RXE_LOG=${RXE_LOG:-$RXE_CACHE/test-rdma.log}
t0=$(date +%s)

# Host packages: headers to build the cgo code (the rest comes with build-initramfs.sh).
missing=""
for p in libibverbs-dev librdmacm-dev; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || missing="$missing $p"
done
if [ -n "$missing" ]; then
  echo "test-rdma: installing$missing" >&2
  export DEBIAN_FRONTEND=noninteractive
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo -E"
  $SUDO timeout 300 apt-get update -qq
  $SUDO timeout 600 apt-get install -y -qq --no-install-recommends $missing >/dev/null
fi
"$HERE/build-initramfs.sh"

W=$(mktemp -d /tmp/jakiro-rdma.XXXXXX)
trap 'rm -rf "$W"' EXIT
cd "$ROOT"
FILES=()
{
  echo '#!/bin/sh'
  echo 'fail=0'
  echo 'if [ ! -e /sys/class/infiniband/rxe0 ]; then echo "test-rdma: FAIL: no rxe0 in the VM"; exit 1; fi'
  echo 'ibv_devinfo -d rxe0 | grep -E "hca_id|state|active_mtu|link_layer"'
  echo "export JAKIRO_RDMA_REQUIRED=1 JAKIRO_RDMA_VM=1"
} > "$W/vm-run.sh"
quoted_args=$(printf '%q ' "$@")
for pkg in $PKGS; do
  name=$(echo "${pkg#./}" | tr '/' '_').test
  echo "test-rdma: go test -c -tags rdma $pkg" >&2
  go test -c -tags rdma -o "$W/$name" "$pkg"
  if [ ! -e "$W/$name" ]; then echo "test-rdma: $pkg has no tests" >&2; exit 1; fi
  FILES+=(-f "$W/$name")
  cat >> "$W/vm-run.sh" <<EOS
echo "=== test-rdma: $pkg"
cd "/mnt/host/${pkg#./}" && /opt/bin/$name -test.v -test.timeout=240s $quoted_args
rc=\$?; [ \$rc = 0 ] && echo "=== test-rdma: ok   $pkg" || { echo "=== test-rdma: FAIL $pkg (exit \$rc)"; fail=1; }
EOS
done
for pkg in $BENCH_PKGS; do
  name=$(echo "${pkg#./}" | tr '/' '_').test
  if [ ! -e "$W/$name" ]; then
    go test -c -tags rdma -o "$W/$name" "$pkg"
    FILES+=(-f "$W/$name")
  fi
  cat >> "$W/vm-run.sh" <<EOS
echo "=== test-rdma: bench $pkg (soft-RoCE under TCG emulation: numbers say nothing about hardware)"
cd "/mnt/host/${pkg#./}" && /opt/bin/$name -test.run='^\$' -test.bench=. -test.benchtime=$BENCHTIME -test.benchmem
rc=\$?; [ \$rc = 0 ] && echo "=== test-rdma: ok   bench $pkg" || { echo "=== test-rdma: FAIL bench $pkg (exit \$rc)"; fail=1; }
EOS
done
STRESS=${RDMA_STRESS-5s}
if [ -n "$STRESS" ]; then
  echo "test-rdma: go build -tags rdma ./cmd/jakiro ./cmd/jakiro-bench (stress)" >&2
  go build -tags rdma -o "$W/jakiro" ./cmd/jakiro
  go build -tags rdma -o "$W/jakiro-bench" ./cmd/jakiro-bench
  FILES+=(-f "$W/jakiro" -f "$W/jakiro-bench")
  cat >> "$W/vm-run.sh" <<EOS
echo "=== test-rdma: stress over rdma:// for $STRESS (every mode, 3 processes)"
cd /mnt/host && BIN=/opt/bin sh scripts/stress.sh rdma --duration $STRESS --mode all
rc=\$?; [ \$rc = 0 ] && echo "=== test-rdma: ok   stress" || { echo "=== test-rdma: FAIL stress (exit \$rc)"; fail=1; }
EOS
fi
echo 'exit $fail' >> "$W/vm-run.sh"
chmod +x "$W/vm-run.sh"
echo "test-rdma: built in $(( $(date +%s) - t0 ))s; booting the VM (log: $RXE_LOG)" >&2
set +e
"$HERE/run-in-vm.sh" -t "${RDMA_VM_TIMEOUT:-600}" -m 1536M -s "$ROOT" "${FILES[@]}" "$W/vm-run.sh"
rc=$?
set -e
echo "test-rdma: $( [ $rc = 0 ] && echo PASS || echo "FAIL (exit $rc)" ) in $(( $(date +%s) - t0 ))s; log: $RXE_LOG" >&2
exit $rc
