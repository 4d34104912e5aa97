package sitetext

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

func TestDropsControls(t *testing.T) {
	for in, want := range map[string]string{
		"Save":                         "Save",
		"a\x1b[2Jb":                    "a[2Jb",
		"x\x1b]52;c;aGk=\x07y":         "x]52;c;aGk=y",
		"\u202eevil\u202c":             "evil",
		"c1\u0085\u009bhere":           "c1here",
		"zero\u200bwidth":              "zerowidth",
		"line\nbreak\ttab":             "line break tab",
		"bad\xffutf8":                  "badutf8",
		"日本語 ok":                       "日本語 ok",
		"link \x1b]8;;http://x\x1b\\t": "link ]8;;http://x\\t",
	} {
		if got := Line(in); got != want {
			t.Errorf("Line(%q) = %q, want %q", in, got, want)
		}
	}
	if got := Block("one\ntwo\x07\r\nthree"); got != "one\ntwo \nthree" {
		t.Errorf("Block kept %q", got)
	}
}

func FuzzSiteText(f *testing.F) {
	f.Add("a\x1b[2J\u202e\u0085b\n")
	f.Fuzz(func(t *testing.T, s string) {
		for _, out := range []string{Line(s), Block(s)} {
			if !utf8.ValidString(out) {
				t.Fatalf("invalid UTF-8 out of %q", s)
			}
			for _, r := range out {
				if (unicode.IsControl(r) && r != '\n') || unicode.Is(unicode.Cf, r) {
					t.Fatalf("%q kept %U", s, r)
				}
			}
		}
		if strings.ContainsRune(Line(s), '\n') {
			t.Fatalf("Line(%q) kept a line break", s)
		}
	})
}
