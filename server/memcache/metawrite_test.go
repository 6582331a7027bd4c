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
