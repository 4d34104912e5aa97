package dom

import "github.com/tabwarden/tabwarden/internal/sitetext"

// siteText is a site-derived string (a title, an element's name or value)
// as observations carry it: control characters (C0, DEL, C1), the format
// characters that reorder or hide text (bidi overrides, zero-width) and
// invalid UTF-8 are dropped, and line breaks and tabs become a space. An
// observation reaches the agent's host, which may print it to a terminal; a
// page must not be able to rewrite that terminal, set its clipboard (OSC 52)
// or reorder what a person reads there.
func siteText(s string) string { return sitetext.Line(s) }

// siteBlock is siteText for page text, keeping its line breaks.
func siteBlock(s string) string { return sitetext.Block(s) }
