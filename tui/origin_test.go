package tui

import (
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"
	"github.com/tabwarden/tabwarden/consent"
)

// origins returns every origin string a review shows.
func origins(r *consent.Review) []string {
	out := []string{r.Origin}
	if r.OriginUnicode != "" && r.OriginUnicode != r.Origin {
		out = append(out, r.OriginUnicode)
	}
	return out
}

// onOneLine reports whether origin appears whole within a single screen line.
func onOneLine(screen, origin string) bool {
	for _, l := range strings.Split(ansi.Strip(screen), "\n") {
		if strings.Contains(l, origin) {
			return true
		}
	}
	return false
}

// TestOriginNeverCut: at every width from 80 up, every panel kind shows its
// full origin on one line, however long the other fields are, and the keys
// that answer it.
func TestOriginNeverCut(t *testing.T) {
	seventy := "https://" + strings.Repeat("a", 70-len("https://")-len(".example:8443")) + ".example:8443"
	if len(seventy) != 70 {
		t.Fatalf("fixture origin is %d chars", len(seventy))
	}
	for name, s := range panelCases() {
		for _, o := range []string{"", seventy, longOrigin} {
			st := s
			f := *s.Focused
			if o != "" {
				f.Origin, f.OriginUnicode = o, o
			}
			f.ConversationName = strings.Repeat("very long conversation name ", 5)
			st.Focused = &f
			st.Queue = []consent.Review{f}
			for _, w := range []int{80, 81, 100, 119, 120, 121, 140, 160, 200} {
				screen := renderState(st, w, 24)
				if keysLine := "a " + f.ApproveLabel + "  d deny"; !onOneLine(screen, keysLine) {
					t.Errorf("%s at %d cols: keys line %q missing", name, w, keysLine)
				}
				for _, want := range origins(&f) {
					if !onOneLine(screen, want) {
						t.Errorf("%s at %d cols: origin %q is not whole on one line:\n%s", name, w, want, ansi.Strip(screen))
					}
				}
			}
		}
	}
}

// TestOriginWiderThanScreenLosesNothing: an origin wider than the terminal
// cannot fit one line; every character still reaches the screen, in order.
func TestOriginWiderThanScreenLosesNothing(t *testing.T) {
	huge := "https://" + strings.Repeat("x", 90) + ".example:1"
	s := panelCases()["navigation"]
	f := *s.Focused
	f.Origin, f.OriginUnicode = huge, huge
	s.Focused, s.Queue = &f, []consent.Review{f}
	lines := strings.Split(ansi.Strip(renderState(s, 80, 24)), "\n")
	joined := ""
	for i, l := range lines {
		if strings.HasPrefix(l, "origin (in full") {
			joined = strings.TrimRight(lines[i+1], " ") + strings.TrimRight(lines[i+2], " ")
			break
		}
	}
	if joined != huge {
		t.Errorf("origin pieces %q do not rebuild %q", joined, huge)
	}
}
