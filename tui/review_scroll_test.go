package tui

import (
	"strings"
	"testing"

	"charm.land/bubbles/v2/viewport"
	"github.com/charmbracelet/x/ansi"
	"github.com/tabwarden/tabwarden/consent"
)

// A review panel given fewer lines than its viewport (a panel opened above
// it) says how much of its body shows instead of cutting it without a
// mark; given none, it says how many lines are hidden.
func TestReviewPanelShorterThanItsBodySaysSo(t *testing.T) {
	r := review(consent.KindRead, "Allow reading this website?", "Allow reading this origin")
	vp := viewport.New()
	vp.SetWidth(60)
	vp.SetHeight(6)
	vp.SetContentLines([]string{"one", "two", "three", "four", "five", "six"})
	p := reviewPanel{r: &r, vp: &vp, st: defaultStyles(), now: fixedNow}
	chrome := p.chromeHeight(60)
	got := ansi.Strip(strings.Join(p.lines(60, chrome+2), "\n"))
	if !strings.Contains(got, "1-2 of 6") || strings.Contains(got, "three") {
		t.Errorf("a panel two lines short of its body:\n%s", got)
	}
	vp.SetHeight(0)
	got = ansi.Strip(strings.Join(p.lines(60, chrome), "\n"))
	if !strings.Contains(got, "6 lines hidden") || strings.Contains(got, "lines 1-0") {
		t.Errorf("a panel with no room for its body:\n%s", got)
	}
}
