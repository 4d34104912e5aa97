package tui

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
	"github.com/tabwarden/tabwarden/consent"
)

// Key presses as the terminal would deliver them.
func press(s string) tea.KeyPressMsg {
	switch s {
	case "enter":
		return tea.KeyPressMsg{Code: tea.KeyEnter}
	case "tab":
		return tea.KeyPressMsg{Code: tea.KeyTab}
	case "shift+tab":
		return tea.KeyPressMsg{Code: tea.KeyTab, Mod: tea.ModShift}
	case "up":
		return tea.KeyPressMsg{Code: tea.KeyUp}
	case "down":
		return tea.KeyPressMsg{Code: tea.KeyDown}
	case "pgdown":
		return tea.KeyPressMsg{Code: tea.KeyPgDown}
	case "pgup":
		return tea.KeyPressMsg{Code: tea.KeyPgUp}
	case "esc":
		return tea.KeyPressMsg{Code: tea.KeyEscape}
	case "ctrl+c":
		return tea.KeyPressMsg{Code: 'c', Mod: tea.ModCtrl}
	}
	r := []rune(s)[0]
	return tea.KeyPressMsg{Code: r, Text: s}
}

// plain is the screen as text: styling stripped, trailing blanks trimmed,
// so golden diffs read like the terminal.
func plain(content string) string {
	lines := strings.Split(ansi.Strip(content), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " ")
	}
	return strings.Join(lines, "\n") + "\n"
}

func newTestModel(s consent.State, w, h int) (Model, *fakeService) {
	f := newFake(s)
	m := New(f, Options{Version: "v0.1.0", Now: fixedClock})
	m = step(m, tea.WindowSizeMsg{Width: w, Height: h})
	return m, f
}

func step(m Model, msg tea.Msg) Model {
	tm, _ := m.Update(msg)
	return tm.(Model)
}

// renderState renders s at w×h after the given messages.
func renderState(s consent.State, w, h int, msgs ...tea.Msg) (raw string) {
	m, _ := newTestModel(s, w, h)
	for _, msg := range msgs {
		m = step(m, msg)
	}
	return m.View().Content
}

type goldenCase struct {
	state consent.State
	msgs  []tea.Msg
}

func goldenCases() map[string]goldenCase {
	cases := map[string]goldenCase{}
	for name, s := range panelCases() {
		cases[name] = goldenCase{state: s}
	}
	cases["disclosure_scrolled"] = goldenCase{state: panelCases()["disclosure"], msgs: []tea.Msg{press("pgdown"), press("j"), press("j")}}
	cases["takeover"] = goldenCase{state: pausedState()}
	cases["frozen"] = goldenCase{state: frozenState()}
	cases["ended"] = goldenCase{state: endedState()}
	cases["dismissed"] = goldenCase{state: dismissedState()}
	cases["overflow"] = goldenCase{state: overflowState()}
	cases["help"] = goldenCase{state: baseState(), msgs: []tea.Msg{press("?")}}
	cases["empty"] = goldenCase{state: consent.State{Profile: consent.ProfileStrict, Info: consent.Info{Browser: "Chromium 131 headed", Endpoint: "http://127.0.0.1:8765/mcp", Policy: "none"}}}
	cases["queue"] = goldenCase{state: queueState()}
	cases["queue_countdown"] = goldenCase{state: queueCountdownState()}
	cases["details"] = goldenCase{state: baseState(), msgs: []tea.Msg{press("down"), press("enter")}}
	cases["quit_prompt"] = goldenCase{state: baseState(), msgs: []tea.Msg{press("q")}}
	return cases
}

var goldenSizes = [][2]int{{80, 24}, {160, 48}}

// update is teatest's golden flag (registered by x/exp/golden, which
// teatest imports); defining our own would collide.
func updating() bool {
	f := flag.Lookup("update")
	return f != nil && f.Value.String() == "true"
}

func requireGolden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if updating() {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./tui -run TestGolden -update)", err)
	}
	if string(want) != got {
		t.Errorf("%s differs from the golden file; got:\n%s\nwant:\n%s", path, got, want)
	}
}

func TestGoldenScreens(t *testing.T) {
	for name, c := range goldenCases() {
		for _, sz := range goldenSizes {
			w, h := sz[0], sz[1]
			t.Run(name+"_"+itoa(w)+"x"+itoa(h), func(t *testing.T) {
				raw := renderState(c.state, w, h, c.msgs...)
				lines := strings.Split(ansi.Strip(raw), "\n")
				if len(lines) != h {
					t.Errorf("screen has %d lines, want exactly %d", len(lines), h)
				}
				for i, l := range lines {
					if lw := ansi.StringWidth(l); lw > w {
						t.Errorf("line %d is %d cells wide (> %d): %q", i+1, lw, w, l)
					}
				}
				// The profile is always on screen.
				if !strings.Contains(lines[0], "consent: "+strings.ToUpper(string(c.state.Profile))) {
					t.Errorf("header does not show the consent profile: %q", lines[0])
				}
				requireGolden(t, name+"_"+itoa(w)+"x"+itoa(h), plain(raw))
			})
		}
	}
}

func TestDump(t *testing.T) {
	name := os.Getenv("TUI_DUMP")
	if name == "" {
		t.Skip("set TUI_DUMP=<case>|all to print screens")
	}
	for n, c := range goldenCases() {
		if n != name && name != "all" {
			continue
		}
		for _, sz := range goldenSizes {
			t.Logf("== %s %dx%d\n%s", n, sz[0], sz[1], plain(renderState(c.state, sz[0], sz[1], c.msgs...)))
		}
	}
}

func windowMsg(w, h int) tea.WindowSizeMsg { return tea.WindowSizeMsg{Width: w, Height: h} }

// TestAnySizeStaysInBounds: every screen, at any size including tiny ones,
// is exactly the terminal's height and never wider than it.
func TestAnySizeStaysInBounds(t *testing.T) {
	sizes := [][2]int{{1, 1}, {20, 5}, {40, 10}, {79, 23}, {119, 40}, {120, 30}, {200, 60}}
	for name, c := range goldenCases() {
		for _, sz := range sizes {
			w, h := sz[0], sz[1]
			lines := strings.Split(ansi.Strip(renderState(c.state, w, h, c.msgs...)), "\n")
			if len(lines) != h {
				t.Errorf("%s %dx%d: %d lines", name, w, h, len(lines))
			}
			for i, l := range lines {
				if ansi.StringWidth(l) > w {
					t.Errorf("%s %dx%d: line %d is %d wide", name, w, h, i+1, ansi.StringWidth(l))
				}
			}
		}
	}
}

func TestDumpSizes(t *testing.T) {
	if os.Getenv("TUI_DUMP_SIZE") == "" {
		t.Skip("set TUI_DUMP_SIZE=WxH and TUI_DUMP=<case>")
	}
	var w, h int
	if _, err := fmt.Sscanf(os.Getenv("TUI_DUMP_SIZE"), "%dx%d", &w, &h); err != nil {
		t.Fatalf("TUI_DUMP_SIZE=%q: want WxH: %v", os.Getenv("TUI_DUMP_SIZE"), err)
	}
	c := goldenCases()[os.Getenv("TUI_DUMP")]
	t.Logf("\n%s", plain(renderState(c.state, w, h, c.msgs...)))
}
