#!/usr/bin/env python3
"""pymemcache against the memcached door: several clients (threads, each
with its own connection) race compare-and-swap loops on one key and
increment one counter; no update may be lost, and cas mismatches must
happen (the race is real). Usage: pymemcache_race.py HOST:PORT"""
import sys
import threading

from pymemcache.client.base import Client

CLIENTS, ROUNDS = 4, 250
host, port = sys.argv[1].rsplit(":", 1)
addr = (host, int(port))
# default_noreply=False: pymemcache's sets are fire-and-forget by default,
# and a worker's first incr could then overtake the set that creates the key.
setup = Client(addr, timeout=5, default_noreply=False)
setup.set("race:cas", b"0")
setup.set("race:ctr", b"0")
conflicts = [0] * CLIENTS
errors = []


def worker(i):
    try:
        c = Client(addr, timeout=5, default_noreply=False)
        for _ in range(ROUNDS):
            if c.incr("race:ctr", 1) is None:
                errors.append("incr: NOT_FOUND")
            while True:
                value, cas = c.gets("race:cas")
                if c.cas("race:cas", str(int(value) + 1).encode(), cas):
                    break
                conflicts[i] += 1
        # decr below zero stops at 0; a non-number is an error
        c.set("race:low:%d" % i, b"3")
        assert c.decr("race:low:%d" % i, 10) == 0
        c.set("race:text:%d" % i, b"abc")
        try:
            c.incr("race:text:%d" % i, 1)
            errors.append("incr of a non-number succeeded")
        except Exception:
            pass
        assert c.add("race:add:%d" % i, b"x", noreply=False)
        assert not c.add("race:add:%d" % i, b"y", noreply=False)
        assert c.get_many(["race:add:%d" % i, "race:nope"]) == {"race:add:%d" % i: b"x"}
    except Exception as e:  # noqa: BLE001 - report everything
        errors.append(repr(e))


threads = [threading.Thread(target=worker, args=(i,)) for i in range(CLIENTS)]
for t in threads:
    t.start()
for t in threads:
    t.join(60)
cas_total = int(setup.get("race:cas"))
ctr_total = int(setup.get("race:ctr"))
want = CLIENTS * ROUNDS
print("pymemcache: %d clients x %d rounds: cas value %d, counter %d (want %d each), %d cas conflicts retried"
      % (CLIENTS, ROUNDS, cas_total, ctr_total, want, sum(conflicts)))
if errors or cas_total != want or ctr_total != want or any(t.is_alive() for t in threads):
    print("pymemcache: FAILED", errors, file=sys.stderr)
    sys.exit(1)
