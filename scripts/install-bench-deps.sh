#!/usr/bin/env bash
# Installs what `jakiro-bench compare` measures against: redis-server and
# memcached, from Debian packages, only if missing. Idempotent; it does not
# start them (jakiro-bench starts them on loopback for the run, then stops
# them).
set -euo pipefail

missing=()
command -v redis-server >/dev/null 2>&1 || missing+=(redis-server)
command -v memcached >/dev/null 2>&1 || missing+=(memcached)
if [ ${#missing[@]} -eq 0 ]; then
	echo "install-bench-deps: redis-server and memcached present"
	exit 0
fi

sudo=""
if [ "$(id -u)" -ne 0 ]; then
	sudo="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
echo "install-bench-deps: installing ${missing[*]}"
$sudo apt-get update -qq
# --no-install-recommends keeps the install small; policy-rc.d-less
# containers may try to start the services: we do not want them running.
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
# Debian's packages start system services where an init system runs; the
# benchmark starts its own instances on free ports, so stop those if any.
for svc in redis-server memcached; do
	if command -v systemctl >/dev/null 2>&1 && systemctl is-active --quiet "$svc" 2>/dev/null; then
		$sudo systemctl stop "$svc" || true
	fi
done
command -v redis-server >/dev/null && command -v memcached >/dev/null
echo "install-bench-deps: done"
