package tui

import (
	"slices"
	"strings"
	"testing"

	"github.com/tabwarden/tabwarden/internal/screentest"
)

// g selects the tab of the oldest review waiting in the queue (not the one
// already on screen); with nothing waiting it says so.
func TestGoGoesToOldestWaitingReview(t *testing.T) {
	m, f := newTestModel(queueState(), 160, 48)
	_ = step(m, press("g"))
	if got := f.Calls(); !slices.Equal(got, []string{"select c1a2 t2"}) {
		t.Fatalf("g selected %v, want the oldest waiting review's tab c1a2/t2", got)
	}
	m, f = newTestModel(baseState(), 160, 48)
	m = step(m, press("g"))
	if len(f.Calls()) != 0 || !strings.Contains(plain(m.View().Content), "no review is waiting") {
		t.Fatalf("g with an empty queue: calls %v\n%s", f.Calls(), plain(m.View().Content))
	}
}

// The footer at 80 columns shows every key a person needs to move around
// (tab, enter, g), whole; wide terminals get the long labels.
func TestFooterFits80Columns(t *testing.T) {
	for _, w := range []int{80, 100, 123} {
		lines := strings.Split(strings.TrimRight(plain(renderState(baseState(), w, 24)), "\n"), "\n")
		foot := lines[len(lines)-1]
		for _, want := range []string{"tab conv", "↵ details", "g next", "? help", "q quit", "t take", "r resume", "x stop", "n token"} {
			if !strings.Contains(foot, want) {
				t.Errorf("%d columns: footer %q lacks %q", w, foot, want)
			}
		}
		if strings.Contains(foot, "…") {
			t.Errorf("%d columns: footer cut: %q", w, foot)
		}
	}
	lines := strings.Split(strings.TrimRight(plain(renderState(baseState(), 160, 48)), "\n"), "\n")
	if foot := lines[len(lines)-1]; !strings.Contains(foot, "a approve  d deny  t take over") || !strings.Contains(foot, "enter details") {
		t.Errorf("160 columns: footer %q", foot)
	}
}

// A headless console's take-over says what the operator can do there,
// never "the Chromium window".
func TestHeadlessTakeOverText(t *testing.T) {
	f := newFake(pausedState())
	m := New(f, Options{Version: "v0.1.0", Now: fixedClock, Headless: true})
	m = step(m, windowMsg(160, 48))
	screen := plain(m.View().Content)
	if strings.Contains(screen, "Chromium window") || !strings.Contains(screen, "no window to finish the step in") || !strings.Contains(screen, "press r to hand the browser back") {
		t.Fatalf("headless take-over banner:\n%s", screen)
	}
	if headed := plain(renderState(pausedState(), 160, 48)); !strings.Contains(headed, "Chromium window") {
		t.Fatalf("headed take-over banner:\n%s", headed)
	}
}

// The console's own note on a take-over (ConversationState.PauseNote, the
// headless demo's "signed in for you") replaces the generic banner text,
// which would ask for typing that is not needed; without a note a screen
// with the page view keeps pointing at v and i (issue 25).
func TestTakeOverNoteReplacesTheBanner(t *testing.T) {
	const note = "The console signed in for you as user name \"demo\"; there is nothing to type. Press r to resume."
	for _, w := range []int{80, 100, 160} {
		st := pausedState()
		st.Conversations[0].PauseNote = note
		m := New(newFake(st), Options{Version: "v0.1.0", Now: fixedClock, Headless: true, Page: newFakePage()})
		m = step(m, windowMsg(w, 40))
		screen := squash(screentest.RightOfDivider(plain(m.View().Content)))
		if !strings.Contains(screen, "PAUSED") || !strings.Contains(screen, "signed in for you") || !strings.Contains(screen, "Press r to resume") {
			t.Errorf("%d columns: the banner lacks the note:\n%s", w, plain(m.View().Content))
		}
		if strings.Contains(screen, "i to type") {
			t.Errorf("%d columns: the banner still asks for typing:\n%s", w, plain(m.View().Content))
		}
		m = New(newFake(pausedState()), Options{Version: "v0.1.0", Now: fixedClock, Headless: true, Page: newFakePage()})
		m = step(m, windowMsg(w, 40))
		if screen := squash(screentest.RightOfDivider(plain(m.View().Content))); !strings.Contains(screen, "press v to see the page and i to type") {
			t.Errorf("%d columns: without a note the headless banner lost v and i:\n%s", w, plain(m.View().Content))
		}
	}
}

// A list longer than its section says how much is cut, in its heading.
func TestOverflowMarker(t *testing.T) {
	screen := plain(renderState(overflowState(), 80, 24))
	if !strings.Contains(screen, "Conversations (10) · 19 more rows, ↑↓") || !strings.Contains(screen, "▸ agent-9 · Codex (c98)") {
		t.Fatalf("no overflow marker, or the selection is not in view:\n%s", screen)
	}
	if full := plain(renderState(overflowState(), 160, 48)); strings.Contains(full, "more rows, ↑↓") {
		t.Fatalf("a marker where everything fits:\n%s", full)
	}
}
