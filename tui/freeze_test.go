package tui

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/exp/teatest/v2"
	"github.com/tabwarden/tabwarden/consent"
)

const frozenMarker = "frozen: batch outcome unknown (job-3f9a2c41d07be815)"

func TestFrozenConversationIsMarkedAndUClearsIt(t *testing.T) {
	m, f := newTestModel(frozenState(), 80, 24)
	if s := screen(m); !strings.Contains(s, frozenMarker) || !strings.Contains(s, "[frozen]") {
		t.Fatalf("no freeze marker:\n%s", s)
	}
	m, cmd := keys(m, "u")
	if got := f.Calls(); !slices.Equal(got, []string{"clearfreeze c1a2"}) {
		t.Fatalf("calls = %v, want the selected conversation's clear", got)
	}
	if cmd == nil || !strings.Contains(screen(m), "freeze cleared") {
		t.Errorf("no feedback after u:\n%s", screen(m))
	}
	// The engine's next snapshot is what takes the marker away.
	m = step(m, stateChangedMsg{state: baseState()})
	if s := screen(m); strings.Contains(s, "frozen") {
		t.Errorf("marker still shown after the engine cleared it:\n%s", s)
	}
}

func TestUActsOnlyOnAFreezeOnScreen(t *testing.T) {
	// The frozen conversation is not the selected one: u must not reach it.
	s := frozenState()
	s.Selection = consent.Selection{Conversation: "c3d4", Tab: "t3"}
	m, f := newTestModel(s, 80, 24)
	m, _ = keys(m, "u")
	if got := f.Calls(); len(got) != 0 {
		t.Errorf("calls = %v, want none", got)
	}
	if !strings.Contains(screen(m), "not frozen") {
		t.Errorf("no explanation for u on a conversation that is not frozen:\n%s", screen(m))
	}
	if !strings.Contains(screen(m), frozenMarker) {
		t.Errorf("the other conversation's marker disappeared:\n%s", screen(m))
	}
}

// TestRealEngineFreezeClear runs the key against the real engine: the
// freeze the engine reports is drawn, u clears it in the engine, and the
// agent-facing check passes again.
func TestRealEngineFreezeClear(t *testing.T) {
	e := consent.New(consent.Config{Now: fixedClock})
	defer e.Close()
	e.AddConversation("c1", "agent one")
	e.PutTab(consent.TabInfo{ID: "t1", Conversation: "c1", URL: "about:blank"})
	if err := e.Freeze("c1", "job-0123456789abcdef"); err != nil {
		t.Fatal(err)
	}
	m := New(e, Options{Now: fixedClock})
	defer m.Close()
	m = step(m, windowMsg(100, 30))
	if !strings.Contains(screen(m), "frozen: batch outcome unknown (job-0123456789abcdef)") {
		t.Fatalf("engine freeze not on screen:\n%s", screen(m))
	}
	m, _ = keys(m, "u")
	if err := e.Frozen("c1"); err != nil {
		t.Fatalf("u did not clear the engine's freeze: %v", err)
	}
	m = step(m, m.waitForChange()())
	if s := screen(m); strings.Contains(s, "[frozen]") || strings.Contains(s, "outcome unknown (") {
		t.Errorf("marker still shown after the clear:\n%s", s)
	}
}

// TestProgramShowsFreezeAndClears drives the real bubbletea program.
func TestProgramShowsFreezeAndClears(t *testing.T) {
	f := newFake(frozenState())
	m := New(f, Options{Version: "test", Now: fixedClock})
	defer m.Close()
	tm := teatest.NewTestModel(t, m, teatest.WithInitialTermSize(100, 30))
	teatest.WaitFor(t, tm.Output(), screenHas(frozenMarker), teatest.WithDuration(5*time.Second))
	tm.Type("u")
	teatest.WaitFor(t, tm.Output(), screenHas("freeze cleared"), teatest.WithDuration(5*time.Second))
	if got := f.Calls(); !slices.Contains(got, "clearfreeze c1a2") {
		t.Errorf("calls = %v, want clearfreeze c1a2", got)
	}
	tm.Type("q")
	tm.Type("y")
	tm.WaitFinished(t, teatest.WithFinalTimeout(5*time.Second))
}
