#!/bin/sh
# Runs `jakiro-bench stress` against a real `jakiro server` process and
# checks the server then stops on SIGTERM within 2 s. POSIX sh: the rdma VM
# (busybox) runs it too.
#
# usage: scripts/stress.sh shm|tcp|rdma [STRESS FLAGS...]   e.g. --duration 5s --mode all
# Env: BIN (dir of jakiro and jakiro-bench, default bin), JAKIRO_AUTH_TOKEN
# (default: a random one), SERVER_FLAGS
# (extra server flags), STRESS_LISTEN (listen URL; default per fabric).
# Exits non-zero if the server does not start, stress fails (an invalid or
# stale value, errors) or the server outlives SIGTERM by 2 s.
set -eu
fab=$1
shift
BIN=${BIN:-bin}
dir=$(mktemp -d "${TMPDIR:-/tmp}/jakiro-stress.XXXXXX")
case $fab in
shm) listen=shm://$dir/jakiro.sock ;;
tcp) listen=tcp://127.0.0.1:0 ;;
rdma) listen=rdma://192.168.77.1:0 ;;
*) echo "stress.sh: fabric $fab: want shm, tcp or rdma" >&2; exit 2 ;;
esac
listen=${STRESS_LISTEN:-$listen}
# Server and stress clients share a token (the server reads it from
# --auth-token's environment variable, clients from the same): protected
# mode refuses rdma:// beyond loopback without one, and auth gets exercised.
if [ -z "${JAKIRO_AUTH_TOKEN:-}" ]; then
	JAKIRO_AUTH_TOKEN=$(od -An -tx1 -N16 /dev/urandom | tr -d ' \n')
	export JAKIRO_AUTH_TOKEN
fi
# The log exists before the server starts: the background job opens it
# only once forked.
: >"$dir/server.log"
# shellcheck disable=SC2086 # SERVER_FLAGS is a list of flags
"$BIN/jakiro" server --listen "$listen" --partitions 2 --memory 256MiB --quiet ${SERVER_FLAGS:-} 2>"$dir/server.log" &
pid=$!
cleanup() {
	kill -KILL "$pid" 2>/dev/null || true
	rm -rf "$dir"
}
trap cleanup EXIT
addr=""
i=0
while [ -z "$addr" ]; do
	addr=$(sed -n 's/.*jakiro: serving on \([^ ]*\) .*/\1/p' "$dir/server.log" || true)
	if ! kill -0 "$pid" 2>/dev/null || [ $i -ge 300 ]; then
		echo "stress.sh: server on $listen did not start:" >&2
		cat "$dir/server.log" >&2
		exit 1
	fi
	i=$((i + 1))
	[ -n "$addr" ] || sleep 0.1 2>/dev/null || sleep 1
done
echo "stress.sh: $fab server pid $pid on $addr"
rc=0
"$BIN/jakiro-bench" stress --addr "$addr" "$@" || rc=$?
# SIGTERM must end the server within 2 s: a watchdog SIGKILLs it after that.
kill -TERM "$pid"
(
	sleep 2
	kill -KILL "$pid" 2>/dev/null
) &
watchdog=$!
st=0
wait "$pid" || st=$?
kill "$watchdog" 2>/dev/null || true
case $st in
0) ;;
137) echo "stress.sh: FAIL: server still running 2 s after SIGTERM" >&2; exit 1 ;;
*) echo "stress.sh: FAIL: server exited with status $st on SIGTERM" >&2; cat "$dir/server.log" >&2; exit 1 ;;
esac
exit $rc
