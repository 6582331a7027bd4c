package memcache

import (
	"strings"
	"testing"
)

// metaCase is a request and the answer memcached gives it.
type metaCase struct{ in, want string }

func runMeta(t *testing.T, c *client, cases []metaCase) {
	t.Helper()
	for _, tc := range cases {
		c.send(tc.in)
		c.expect(tc.want)
	}
}

// mg u with T sets the TTL without making the item read: h and l stay as
// they were (memcached 1.6.18's answers).
func TestMetaPeekTouch(t *testing.T) {
	b := newTestBackend(t, 2, false)
	c := dialDoor(t, startDoor(t, Config{}, b))
	c.send("ms u1 1 T100\r\nx\r\nms u2 1 T100\r\nx\r\nms u3 1\r\nx\r\n")
	c.expect("HD\r\nHD\r\nHD\r\n")
	b.skew.Add(4)
	runMeta(t, c, []metaCase{
		{"mg u1 u T30\r\nmg u1 h l t\r\n", "HD\r\nHD h0 l4 t30\r\n"},
		{"mg u2 u T40 v\r\nmg u2 h t\r\n", "VA 1\r\nx\r\nHD h0 t40\r\n"},
		{"mg u3 T50\r\nmg u3 h l t\r\n", "HD\r\nHD h1 l0 t50\r\n"}, // without u: a read
	})
}

// T and N act where they stand among the flags: a t before them reports
// the TTL before (-1 on an item N creates), the last of them sets a new
// item's TTL, R compares the TTL T set if T came first (memcached 1.6.18's
// answers, mg and ma alike).
func TestMetaFlagOrder(t *testing.T) {
	c := dialDoor(t, startDoor(t, Config{}, newTestBackend(t, 2, false)))
	runMeta(t, c, []metaCase{
		{"ms o1 1 T100\r\nx\r\nmg o1 t T30\r\nmg o1 t\r\n", "HD\r\nHD t100\r\nHD t30\r\n"},
		{"mg o2 t N30 s\r\nmg o2 t\r\n", "HD t-1 s0 W\r\nHD t30 Z\r\n"},
		{"mg o3 t N30 T60\r\nmg o3 t\r\n", "HD t-1 W\r\nHD t60 Z\r\n"},
		{"mg o4 N30 t T60\r\nmg o4 t\r\n", "HD t30 W\r\nHD t60 Z\r\n"},
		{"mg o5 T60 t N30\r\nmg o5 t\r\n", "HD t60 W\r\nHD t30 Z\r\n"},
		{"mg o6 N30 T60 t\r\nmg o6 t\r\n", "HD t60 W\r\nHD t60 Z\r\n"},
		{"ms o7 1 T100\r\nx\r\nmg o7 t T30 R50\r\nmg o7 t R50\r\n", "HD\r\nHD t100 W\r\nHD t30 Z\r\n"},
		{"ms o8 1 T100\r\nx\r\nmg o8 R50 T30 t\r\nmg o8 t\r\n", "HD\r\nHD t30\r\nHD t30\r\n"},
		{"ms o9 1\r\nx\r\nmg o9 t T30 v\r\n", "HD\r\nVA 1 t-1\r\nx\r\n"},
		{"ms a1 1 T100\r\n5\r\nma a1 t T30 v\r\nmg a1 t v\r\n", "HD\r\nVA 1 t100\r\n6\r\nVA 1 t30\r\n6\r\n"},
		{"ma a2 t N30 v\r\nmg a2 t v\r\n", "VA 1 t-1\r\n0\r\nVA 1 t30\r\n0\r\n"},
		{"ma a3 N30 T60 t\r\nmg a3 t\r\n", "HD t60\r\nHD t60\r\n"},
		{"ma a4 T60 N30 t\r\nmg a4 t\r\n", "HD t30\r\nHD t30\r\n"},
	})
}

// ms's C as memcached 1.6.18 applies it per mode: set and replace compare
// and swap (C0: EX, NF without an item); add ignores it; append and
// prepend compare only with an item there (C0: no compare) and answer NS
// without one; I stores with an older C in replace mode too.
func TestMetaSetCAS(t *testing.T) {
	c := dialDoor(t, startDoor(t, Config{}, newTestBackend(t, 2, false)))
	runMeta(t, c, []metaCase{
		{"ms n1 1 MA C5\r\nx\r\nms n2 1 MP C5\r\nx\r\nms n3 1 MR C5\r\nx\r\nms n4 1 MA C0\r\nx\r\n", "NS\r\nNS\r\nNF\r\nNS\r\n"},
		{"ms n5 1 ME C5\r\nx\r\nmg n5 v\r\n", "HD\r\nVA 1\r\nx\r\n"},
		{"ms k 1 E10\r\na\r\nms k 1 MA C0\r\nb\r\nms k 1 MA C10\r\nc\r\nmg k v\r\n", "HD\r\nHD\r\nEX\r\nVA 2\r\nab\r\n"},
		{"ms k 1 E11\r\na\r\nms k 1 MP C11\r\nb\r\nmg k v\r\n", "HD\r\nHD\r\nVA 2\r\nba\r\n"},
		{"ms k 1 ME C99\r\nd\r\nms k 1 ME C0\r\nd\r\nms k 1 MR C99\r\nd\r\nms k 1 MR C0\r\nd\r\n", "NS\r\nNS\r\nEX\r\nEX\r\n"},
		{"ms k 1 I C0\r\nd\r\nms k 1 E20\r\ne\r\nms k 1 I MR C1\r\nf\r\nmg k v\r\n", "EX\r\nHD\r\nHD\r\nVA 1 X W\r\nf\r\n"},
		// c answers c0 when nothing was stored; ms answers no other
		// return flag but k, O and (memcached 1.6.20 on) s.
		{"ms k 1 c C99 k O1 t f\r\ny\r\nms k 1 s t f h l k E30 c\r\nz\r\nms n6 1 c MR\r\nz\r\n", "EX c0 kk O1\r\nHD s1 kk c30\r\nNS c0\r\n"},
	})
}

// ms with N in append mode stores its value as a new item when there is
// none, with N's TTL and F's flags, C unchecked (memcached 1.6.20 on;
// 1.6.18 ignored N: NS).
func TestMetaSetVivify(t *testing.T) {
	c := dialDoor(t, startDoor(t, Config{}, newTestBackend(t, 2, false)))
	runMeta(t, c, []metaCase{
		{"ms v1 2 MA N30 T90 F5\r\nab\r\nmg v1 t v s f\r\n", "HD\r\nVA 2 t30 s2 f5\r\nab\r\n"},
		{"ms v1 2 MA N60 s\r\ncd\r\nmg v1 t v\r\n", "HD s4\r\nVA 4 t30\r\nabcd\r\n"},
		{"ms v2 2 MS N30\r\nab\r\nmg v2 t\r\n", "HD\r\nHD t-1\r\n"}, // N is append's
		{"ms v3 2 MP N30 C99 s\r\nab\r\nmg v3 v t\r\n", "HD s2\r\nVA 2 t30\r\nab\r\n"},
		{"ms v4 2 MA\r\nab\r\n", "NS\r\n"},
	})
}

// E gives the written item the client's cas: ms's, md I's, ma's, and the
// item mg N creates (memcached 1.6.27 on; 1.6.18 refused E as an invalid
// flag). E0 is refused: the store keeps no cas of 0.
func TestMetaExplicitCAS(t *testing.T) {
	c := dialDoor(t, startDoor(t, Config{}, newTestBackend(t, 2, false)))
	runMeta(t, c, []metaCase{
		{"ms e1 1 E12345 c\r\nx\r\nmg e1 c\r\ngets e1\r\n", "HD c12345\r\nHD c12345\r\nVALUE e1 0 1 12345\r\nx\r\nEND\r\n"},
		{"ms e1 1 C12345 E12346 c\r\ny\r\nms e1 1 C12345\r\nz\r\n", "HD c12346\r\nEX\r\n"},
		{"md e1 I E777\r\nmg e1 c v\r\nmg e1 E1 c\r\n", "HD\r\nVA 1 c777 X W\r\ny\r\nHD c777 Z X\r\n"},
		{"ma e2 N0 E55 c\r\nma e2 E66 c v\r\nma e2 C66 E67 c t\r\nma e2 C66\r\n", "HD c55\r\nVA 1 c66\r\n1\r\nHD c67 t-1\r\nEX\r\n"},
		{"mg e3 N30 E99 c\r\n", "HD c99 W\r\n"},
		{"ms e4 1 E18446744073709551615 c\r\nz\r\ncas e4 0 0 1 18446744073709551615\r\nw\r\n", "HD c18446744073709551615\r\nSTORED\r\n"},
		{"mg e1 E0 v\r\nms e5 1 E0\r\nz\r\nmd e1 E0\r\n", strings.Repeat("CLIENT_ERROR E0: the door keeps no cas of 0\r\n", 3)},
	})
}

// md x replaces the value by an empty one, keeping the item's cas, with
// F's flags and T's TTL (none without T); with I the empty item is then
// stale, with a new cas or E's (memcached 1.6.27 on; 1.6.18 refused x).
func TestMetaDeleteValue(t *testing.T) {
	c := dialDoor(t, startDoor(t, Config{}, newTestBackend(t, 2, false)))
	runMeta(t, c, []metaCase{
		{"ms x1 3 F5 T100 E40\r\nabc\r\nmd x1 x\r\nmg x1 s f t c v\r\n", "HD\r\nHD\r\nVA 0 s0 f0 t-1 c40\r\n\r\n"},
		{"md x1 x T50 F7 I E41\r\nmg x1 s f t c v\r\n", "HD\r\nVA 0 s0 f7 t50 c41 X W\r\n\r\n"},
		{"md x2 x\r\nmd x1 x C1\r\nmd x1 x C41 q k\r\nmg x1 c h\r\n", "NF\r\nEX\r\nHD c41 h0\r\n"}, // a new item: not stale, not read
		{"md x1 x E42 O9\r\nmg x1 c\r\nmd x1 x T-1\r\nmg x1 v\r\n", "HD O9\r\nHD c42\r\nHD\r\nEN\r\n"},
	})
}

// ma as memcached 1.6.18 answers it: C (not 0) compares before the number
// is read, an empty value is no number, N creates a missing item (C
// unchecked), T sets the TTL after it, t and c report, q hides a success,
// its number too (and, as memcached 1.6.40 on, a creation's).
func TestMetaArith(t *testing.T) {
	c := dialDoor(t, startDoor(t, Config{}, newTestBackend(t, 2, false)))
	runMeta(t, c, []metaCase{
		{"ma z1 T60 t\r\nma z1 C5 v\r\nma z1 C5 N0 v O3 k\r\n", "NF\r\nNF\r\nVA 1 O3 kz1\r\n0\r\n"},
		// (memcached loses T when the number grows a digit: it sets the
		// TTL of the item it replaced; the door keeps it.)
		{"ma z1 C0 v q\r\nma z1 MD v\r\nma z1 MI D5 T100 v t\r\nmg z1 v t\r\nmn\r\n", "VA 1\r\n0\r\nVA 1 t100\r\n5\r\nVA 1 t100\r\n5\r\nMN\r\n"},
		{"ms z2 1 T100\r\n5\r\nma z2 T0 t\r\nmg z2 t\r\n", "HD\r\nHD t-1\r\nHD t-1\r\n"},
		{"ms z3 0\r\n\r\nma z3 C99 v\r\nma z3 N0 v\r\n", "HD\r\n" + strings.Repeat("CLIENT_ERROR cannot increment or decrement non-numeric value\r\n", 2)},
		{"ms z4 1 E7\r\nx\r\nma z4 q\r\nma z4 q k O1 C99\r\nma z4 C7 s f h l u v\r\nmn\r\n", "HD\r\nCLIENT_ERROR cannot increment or decrement non-numeric value\r\nEX kz4 O1\r\nCLIENT_ERROR cannot increment or decrement non-numeric value\r\nMN\r\n"},
		{"ma z5 N0 J7 q\r\nmg z5 v h\r\nma z5 c E9 v h s\r\n", "VA 1 h0\r\n7\r\nVA 1 c9\r\n8\r\n"},
		{"ms z6 1\r\n5\r\nma z6 T-1\r\nmg z6 v\r\n", "HD\r\nHD\r\nEN\r\n"},
	})
}

// Every meta command takes every flag memcached 1.6.18's parser knows and
// ignores those it has no use for; its errors are memcached's, by flag
// (the last one's), by command and for too many flags.
func TestMetaFlagsEverywhere(t *testing.T) {
	c := dialDoor(t, startDoor(t, Config{}, newTestBackend(t, 2, false)))
	runMeta(t, c, []metaCase{
		{"mg z7 v F5 M1 J1 D1 I P L\r\nms z7 1 v h l u R1 J1 D1 P L\r\nx\r\nmd z7 v h l u R1 N1 J1 D1 P L M1 s\r\n", "EN\r\nHD\r\nHD\r\n"},
		{"ma z8 s f h l u R1 F1 I P L\r\nmg z8 v\r\nmg z7 v\r\n", "NF\r\nEN\r\nEN\r\n"},
		{"ms e1 1 Tabc\r\nx\r\nms e1 1 MAB\r\nx\r\nmg e1 MAB\r\nmd e1 MAB\r\nma e1 MAB\r\n",
			"CLIENT_ERROR bad token in command line format\r\nCLIENT_ERROR incorrect length for M token\r\nCLIENT_ERROR incorrect length for M token\r\n" +
				"CLIENT_ERROR invalid or duplicate flag\r\nCLIENT_ERROR invalid or duplicate flag\r\n"},
		{"ms e1 1 Cx\r\nx\r\nmd e1 Cx\r\nmg e1 Cx\r\nms e1 1 Nx\r\nx\r\nms e1 1 Fx\r\nx\r\n",
			"CLIENT_ERROR bad token in command line format\r\nCLIENT_ERROR invalid or duplicate flag\r\nCLIENT_ERROR bad token in command line format\r\n" +
				"CLIENT_ERROR bad token in command line format\r\nCLIENT_ERROR bad command line format\r\n"},
		{"mg e2 Jx\r\nmg e2 Dx\r\nma e2 Jx\r\nmg e2 Rx\r\nms e2 1 Rx\r\nx\r\n",
			"CLIENT_ERROR invalid numeric initial value\r\nCLIENT_ERROR invalid numeric delta value\r\nCLIENT_ERROR invalid or duplicate flag\r\n" +
				"CLIENT_ERROR bad token in command line format\r\nCLIENT_ERROR bad token in command line format\r\n"},
		{"mg e2 Fx Tx\r\nmg e2 Tx Fx\r\nmg e2 Jx Tx\r\nmg e2 Tx zz\r\nmg e2 T99999999999999999999\r\n",
			strings.Repeat("CLIENT_ERROR bad token in command line format\r\n", 3) + "CLIENT_ERROR invalid flag\r\nCLIENT_ERROR bad token in command line format\r\n"},
		// memcached cuts a TTL to 32 bits: 99999999999 is 1215752191, a
		// Unix time long past.
		{"ms e3 1\r\nx\r\nmg e3 T99999999999\r\nmg e3 v\r\n", "HD\r\nHD\r\nEN\r\n"},
		{"mg k s t c f h l v k O1 q u T1 N1 R1 C1 F1 M1 J1\r\nmd k s t c f h l v k O1 q u T1 N1 R1 C1 F1 M1 J1\r\nms k 1 s t c f h l v k O1 u T1 N1 R1 C1 F1 MS J1\r\nx\r\n",
			"CLIENT_ERROR options flags are too long\r\n" + strings.Repeat("CLIENT_ERROR options flags too long\r\n", 2)},
		{"mg k s t c f h l v k O1 q u T1 N1 R1 C9999 F1 E5\r\n", "VA 0 s0 t-1 c5 f0 h0 l0 kk O1 W\r\n\r\n"}, // 17 flags: taken
	})
}

// An ms too large for the cache removes its key whatever its mode, as
// memcached's; an append whose item would be is not stored (NS, and
// NOT_STORED for the ascii append), as memcached 1.6.18 answers.
func TestMetaTooLarge(t *testing.T) {
	c := dialDoor(t, startDoor(t, Config{}, newTestBackend(t, 2, false))) // 64 KiB values
	big := strings.Repeat("a", 40000)
	huge := strings.Repeat("b", 70000)
	runMeta(t, c, []metaCase{
		{"set tl1 0 0 40000\r\n" + big + "\r\nappend tl1 0 0 40000\r\n" + big + "\r\nms tl1 40000 MA\r\n" + big + "\r\nmg tl1 s\r\n",
			"STORED\r\nNOT_STORED\r\nNS\r\nHD s40000\r\n"},
		{"ms tl1 70000 MA\r\n" + huge + "\r\nmg tl1 s\r\nms tl2 1\r\nx\r\nms tl2 70000 ME C5\r\n" + huge + "\r\nmg tl2 s\r\n",
			"SERVER_ERROR object too large for cache\r\nEN\r\nHD\r\nSERVER_ERROR object too large for cache\r\nEN\r\n"},
	})
}

// me reads a b right after the key and ignores anything else, as
// memcached 1.6.18; a key that does not decode is a bad command line.
func TestMetaDebugTokens(t *testing.T) {
	c := dialDoor(t, startDoor(t, Config{}, newTestBackend(t, 1, false)))
	runMeta(t, c, []metaCase{
		{"ms me1 1 E5\r\nx\r\nme me1 x\r\nme me1 b\r\nme me1 v v\r\nme bWUx b\r\n",
			"HD\r\n" + strings.Repeat("ME me1 exp=-1 la=0 cas=5 fetch=no size=1\r\n", 1) + "CLIENT_ERROR bad command line format\r\n" +
				strings.Repeat("ME me1 exp=-1 la=0 cas=5 fetch=no size=1\r\n", 2)},
	})
}
