package main

import (
	"net"
	"testing"

	"github.com/amalgam-store/amalgam/internal/clitest"
)

func TestNBDFlagValidation(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := ln.Addr().String()
	_ = ln.Close()
	clitest.Refuses(t, newRootCmd, []clitest.Refusal{
		{[]string{"nbd"}, "give at least one --export"},
		{[]string{"nbd", "--export", "=1-2"}, "the name must not be empty"},
		{[]string{"nbd", "--export", "d=5-2"}, "FIRST-LAST with FIRST <= LAST"},
		{[]string{"nbd", "--export", "d=x"}, "FIRST-LAST"},
		{[]string{"nbd", "--export", "d", "--export", "d=1-2"}, `"d": the name is given twice`},
		{[]string{"nbd", "--export", "d", "--clients", "0"}, "must be positive"},
		{[]string{"nbd", "--export", "d", "--log-level", "loud"}, "--log-level"},
		{[]string{"nbd", "--export", "d", "--cluster", dead, "--dial-timeout", "500ms"}, "unreachable"},
	})
}

func TestParseExport(t *testing.T) {
	for in, want := range map[string]exportSpec{
		"disk":         {name: "disk", all: true},
		"a=0-511":      {name: "a", first: 0, last: 511},
		"b=512-512":    {name: "b", first: 512, last: 512},
		"c=d=1-2":      {}, // the range is "d=1-2": refused
		"with space=1": {},
	} {
		got, err := parseExport(in)
		if (want == exportSpec{}) != (err != nil) || err == nil && got != want {
			t.Errorf("parseExport(%q) = %+v, %v; want %+v", in, got, err, want)
		}
	}

}
