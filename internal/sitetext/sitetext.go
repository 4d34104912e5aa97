// Package sitetext makes text a website wrote safe to pass on: to an
// agent's host, which may print it to a terminal, and to a person's screen.
// A page must not be able to rewrite that terminal, set its clipboard (OSC
// 52) or reorder what a person reads there. Control characters (C0, DEL,
// C1), the format characters that reorder or hide text (bidi overrides,
// zero-width) and invalid UTF-8 are dropped.
package sitetext

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Line is s on one line: line breaks and tabs become a space.
func Line(s string) string { return clean(s, false) }

// Block is Line keeping s's line breaks (page text).
func Block(s string) string { return clean(s, true) }

func clean(s string, keepLines bool) string {
	clean := true
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		i += n
		switch {
		case r == utf8.RuneError && n <= 1:
		case r == '\n' && keepLines:
			b.WriteByte('\n')
		case r == '\n' || r == '\t' || r == '\r':
			b.WriteByte(' ')
		case unicode.IsControl(r), unicode.Is(unicode.Cf, r):
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}
