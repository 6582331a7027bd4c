#!/bin/sh
# Runs memccapable (libmemcached-tools: memcached's protocol conformance
# tests, ascii and binary) against `jakiro server --memcached` and fails
# unless every test passes; then pymemcache_race.py (cas races and counters
# from several pymemcache clients). The Makefile installs both tools.
#
# usage: scripts/memcapable.sh [PARTITIONS]   (default 2)
# Env: BIN (dir of jakiro, default bin).
set -eu
BIN=${BIN:-bin}
parts=${1:-2}
command -v memccapable >/dev/null || { echo "memcapable.sh: memccapable not installed (make memcapable installs libmemcached-tools)" >&2; exit 2; }
# Debian's python3-pymemcache is for the system's python3, which another
# python3 earlier in PATH (pyenv) does not see.
PY=${PYTHON:-python3}
[ -x /usr/bin/python3 ] && PY=${PYTHON:-/usr/bin/python3}
"$PY" -c 'import pymemcache' 2>/dev/null || { echo "memcapable.sh: pymemcache not installed (make memcapable installs python3-pymemcache)" >&2; exit 2; }
dir=$(mktemp -d "${TMPDIR:-/tmp}/jakiro-memcapable.XXXXXX")
: >"$dir/server.log"
# No token: the door then speaks ascii and needs no SASL, which memccapable
# does not do; loopback only.
env -u JAKIRO_AUTH_TOKEN "$BIN/jakiro" server --listen "shm://$dir/jakiro.sock" --partitions "$parts" --memory 64MiB \
	--memcached 127.0.0.1:0 --quiet 2>"$dir/server.log" &
pid=$!
cleanup() {
	kill -KILL "$pid" 2>/dev/null || true
	rm -rf "$dir"
}
trap cleanup EXIT
addr=
for _ in $(seq 100); do
	addr=$(sed -n 's/.*memcached protocol on \([0-9.]*:[0-9]*\).*/\1/p' "$dir/server.log")
	[ -n "$addr" ] && break
	kill -0 "$pid" 2>/dev/null || { cat "$dir/server.log" >&2; exit 1; }
	sleep 0.1
done
[ -n "$addr" ] || { echo "memcapable.sh: the server did not start its memcached door" >&2; cat "$dir/server.log" >&2; exit 1; }
echo "memcapable: memccapable against jakiro server --memcached $addr ($parts partitions)"
out=$(timeout 120 memccapable -h "${addr%:*}" -p "${addr##*:}" -t 5 2>&1) || rc=$?
echo "$out" | tr -d '\r' | sed 's/\[pass\]/[pass]\n/g; s/\[FAIL\]/[FAIL]\n/g' | grep -v '^$'
passed=$(echo "$out" | grep -o '\[pass\]' | wc -l)
failed=$(echo "$out" | grep -o '\[FAIL\]' | wc -l)
echo "memcapable: $passed passed, $failed failed"
if [ "${rc:-0}" != 0 ] || [ "$failed" != 0 ] || ! echo "$out" | grep -q 'All tests passed'; then
	echo "memcapable: FAILED" >&2
	exit 1
fi
# A client nobody here wrote, in another language: cas races and counters
# from several connections (python3-pymemcache).
"$PY" "$(dirname "$0")/pymemcache_race.py" "$addr"
kill -TERM "$pid"
for _ in $(seq 20); do kill -0 "$pid" 2>/dev/null || exit 0; sleep 0.1; done
echo "memcapable: the server outlived SIGTERM by 2 s" >&2
exit 1
