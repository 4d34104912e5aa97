package dom

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// siteText is a site-derived string (a title, an element's name or value)
// as observations carry it: control characters (C0, DEL, C1), the format
// characters that reorder or hide text (bidi overrides, zero-width) and
// invalid UTF-8 are dropped, and line breaks and tabs become a space. An
// observation reaches the agent's host, which may print it to a terminal; a
// page must not be able to rewrite that terminal, set its clipboard (OSC 52)
// or reorder what a person reads there.
func siteText(s string) string { return cleanSite(s, false) }

// siteBlock is siteText for page text, keeping its line breaks.
func siteBlock(s string) string { return cleanSite(s, true) }

func cleanSite(s string, keepLines bool) string {
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
