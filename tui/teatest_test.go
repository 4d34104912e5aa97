package tui

import (
	"bytes"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/exp/teatest/v2"
	"github.com/tabwarden/tabwarden/consent"
)

// waitDecided returns the next decision the fake saw; the fake signals on a
// channel, so the test waits for the event, not for time.
func waitDecided(t *testing.T, f *fakeService) string {
	t.Helper()
	select {
	case d := <-f.decided:
		return d
	case <-time.After(5 * time.Second):
		t.Fatal("the service never received a decision")
		return ""
	}
}

func screenHas(s string) func([]byte) bool {
	return func(b []byte) bool { return bytes.Contains([]byte(ansi.Strip(string(b))), []byte(s)) }
}

// TestProgramApproveThroughKeyAheadGuard drives the real bubbletea program:
// the first `a` arrives too early (the engine says so) and the screen says
// the key was ignored; the second `a` approves; the engine's next snapshot
// clears the review from the screen.
func TestProgramApproveThroughKeyAheadGuard(t *testing.T) {
	s := panelCases()["navigation"]
	f := newFake(s)
	calls := 0
	f.decideFn = func(id string, approve bool) error {
		calls++
		if calls == 1 {
			return consent.ErrTooEarly
		}
		return nil
	}
	m := New(f, Options{Version: "test", Now: fixedClock})
	defer m.Close()
	tm := teatest.NewTestModel(t, m, teatest.WithInitialTermSize(100, 30))

	teatest.WaitFor(t, tm.Output(), screenHas("Allow origin in this tab"), teatest.WithDuration(5*time.Second))

	tm.Type("a")
	if got := waitDecided(t, f); got != "r-navigation approve" {
		t.Fatalf("first decision = %q", got)
	}
	teatest.WaitFor(t, tm.Output(), screenHas("key ignored: review just appeared"), teatest.WithDuration(5*time.Second))

	tm.Type("a")
	if got := waitDecided(t, f); got != "r-navigation approve" {
		t.Fatalf("second decision = %q", got)
	}
	f.set(baseState()) // the engine resolved the review
	teatest.WaitFor(t, tm.Output(), screenHas("No review on screen"), teatest.WithDuration(5*time.Second))

	tm.Type("q")
	teatest.WaitFor(t, tm.Output(), screenHas("quit? live conversations will be canceled (y/n)"), teatest.WithDuration(5*time.Second))
	tm.Type("y")
	final := tm.FinalModel(t, teatest.WithFinalTimeout(5*time.Second)).(Model)
	if final.state.Focused != nil {
		t.Errorf("final model still shows review %q", final.state.Focused.ID)
	}
	want := map[string]bool{"cancel c1a2": true, "cancel c3d4": true}
	for _, c := range f.Calls() {
		delete(want, c)
	}
	if len(want) != 0 {
		t.Errorf("quitting did not cancel %v; calls %v", want, f.Calls())
	}
}
