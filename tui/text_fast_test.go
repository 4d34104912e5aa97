package tui

import (
	"testing"

	"github.com/charmbracelet/x/ansi"
)

// The fast paths of width and trunc must agree with the ansi package they
// shortcut, on plain, styled, wide and combining text alike.
func TestWidthAndTruncMatchAnsi(t *testing.T) {
	for _, s := range []string{
		"", "plain ascii", "tab\there", "\x1b[1mbold\x1b[0m", "日本語テキスト", "e\u0301te", "👍🏽 ok",
		"a\x7fb", "\x1b]8;;http://127.0.0.1/\x07link\x1b]8;;\x07", "mixed 日本 \x1b[31mred\x1b[0m",
	} {
		if got, want := width(s), ansi.StringWidth(s); got != want {
			t.Errorf("width(%q) = %d, ansi says %d", s, got, want)
		}
		for w := 1; w <= len(s)+2; w++ {
			if got, want := trunc(s, w), ansi.Truncate(s, w, "…"); got != want {
				t.Errorf("trunc(%q, %d) = %q, ansi says %q", s, w, got, want)
			}
		}
	}
}
