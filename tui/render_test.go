package tui

import (
	"os"
	"testing"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
	"github.com/tabwarden/tabwarden/consent"
)

// renderState renders s at w×h as plain text.
func renderState(s consent.State, w, h int, keys ...tea.Msg) string {
	m := New(newFake(s), Options{Version: "v0.1.0", Now: fixedClock})
	var tm tea.Model = m
	tm, _ = tm.Update(tea.WindowSizeMsg{Width: w, Height: h})
	for _, k := range keys {
		tm, _ = tm.Update(k)
	}
	return ansi.Strip(tm.(Model).View().Content)
}

func TestDump(t *testing.T) {
	if os.Getenv("TUI_DUMP") == "" {
		t.Skip()
	}
	for name, s := range panelCases() {
		if name != os.Getenv("TUI_DUMP") && os.Getenv("TUI_DUMP") != "all" {
			continue
		}
		for _, sz := range [][2]int{{80, 24}, {160, 48}} {
			t.Logf("== %s %dx%d\n%s", name, sz[0], sz[1], renderState(s, sz[0], sz[1]))
		}
	}
}
