package main

import (
	"slices"
	"testing"
)

func TestFlagsFirst(t *testing.T) {
	app := newApp()
	for _, tc := range []struct{ in, want []string }{
		{[]string{"put", "k", "v", "--ttl", "1"}, []string{"put", "--ttl", "1", "--", "k", "v"}},
		{[]string{"put", "--ttl", "1", "k", "v"}, []string{"put", "--ttl", "1", "--", "k", "v"}},
		{[]string{"put", "k", "--ttl=1", "v", "-addr", "shm:///x"}, []string{"put", "--ttl=1", "-addr", "shm:///x", "--", "k", "v"}},
		{[]string{"put", "k", "--", "-5", "--ttl"}, []string{"put", "--", "k", "-5", "--ttl"}},
		{[]string{"put", "--", "-k", "v"}, []string{"put", "--", "-k", "v"}},
		{[]string{"stats", "-v", "--json"}, []string{"stats", "-v", "--json"}},
		{[]string{"stats", "--json", "extra"}, []string{"stats", "--json", "--", "extra"}},
		{[]string{"get", "k", "--bogus"}, []string{"get", "--bogus", "--", "k"}},       // unknown: the parser names it
		{[]string{"put", "k", "-"}, []string{"put", "--", "k", "-"}},                   // "-" is an argument
		{[]string{"put", "k", "v", "--ttl"}, []string{"put", "--ttl", "--", "k", "v"}}, // the parser says it needs a value
		{[]string{"--version"}, []string{"--version"}},
		{[]string{"--version", "get", "k", "--addr", "x"}, []string{"--version", "get", "--addr", "x", "--", "k"}},
		{[]string{"help", "put"}, []string{"help", "put"}},
		{[]string{"nosuch", "a", "--b"}, []string{"nosuch", "a", "--b"}},
		{[]string{"delete", "k", "--timeout", "1s"}, []string{"delete", "--timeout", "1s", "--", "k"}}, // an alias
	} {
		got := flagsFirst(app, append([]string{"jakiro"}, tc.in...))
		if want := append([]string{"jakiro"}, tc.want...); !slices.Equal(got, want) {
			t.Errorf("flagsFirst(%q) = %q, want %q", tc.in, got[1:], tc.want)
		}
	}
}
