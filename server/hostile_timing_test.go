package server_test

import (
	"os/exec"
	"testing"
)

// BenchmarkHostile measures how much of its rate an honest tcp client
// keeps beside each attack of hostile_test.go: the median over 12
// interleaved pairs (400 ms alone, 400 ms attacked) of attacked over
// alone, reported as honest-x. The bars are 0.7x beside the vanish loop,
// 0.5x beside read amplification and 0.8x beside clients that write wrap
// markers at their rings' starts (each loses its connection, and dials
// again). Run it on a quiet machine:
//
//	go test -run '^$' -bench Hostile -benchtime 1x ./server
func BenchmarkHostile(b *testing.B) {
	const pairs = 12
	report := func(b *testing.B, r honestRates) {
		b.ReportMetric(r.ratio, "honest-x")
		b.ReportMetric(r.alone, "alone-ops/s")
		b.ReportMetric(r.attacked, "attacked-ops/s")
		b.ReportMetric(0, "ns/op")
	}
	b.Run("vanish", func(b *testing.B) {
		srv, _, c := hostileServer(b, "--max-clients", "32")
		var peak int64
		start, stop := vanishAttack(b, srv, &peak)
		for range b.N {
			report(b, attackRates(b, c, pairs, start, stop))
		}
	})
	for _, fab := range []string{"tcp", "shm"} {
		b.Run("wrapmarker/"+fab, func(b *testing.B) {
			srv, _, c := hostileServerOn(b, e2eListenTB(b, fab))
			var attacker *exec.Cmd
			start := func() { attacker = startAttacker(b, "wrapattack", "wrap", srv.Addr, 4) }
			stop := func() { attacker.Process.Kill(); attacker.Wait() }
			for range b.N {
				report(b, attackRates(b, c, pairs, start, stop))
			}
		})
	}
	b.Run("amplify", func(b *testing.B) {
		srv, _, c := hostileServer(b)
		var peak int64
		start, stop := amplifyAttack(b, srv, 10, &peak)
		for range b.N {
			report(b, attackRates(b, c, pairs, start, stop))
		}
	})
}
