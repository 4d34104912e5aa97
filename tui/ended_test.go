package tui

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tabwarden/tabwarden/consent"
)

func TestEndedConversationCountsDownAndOKeepsItsTabs(t *testing.T) {
	m, f := newTestModel(endedState(), 80, 24)
	s := screen(m)
	if !strings.Contains(s, "cursor · Cursor (c5e6) [ended]") || !strings.Contains(s, "tabs close in 1:45 · o keep") {
		t.Fatalf("no ended conversation with its countdown:\n%s", s)
	}
	// Its tabs are listed under it, not again as operator tabs.
	if strings.Count(s, "Orders — Shop") != 1 || !strings.Contains(s, "Operator tabs (1,") {
		t.Fatalf("ended tabs listed twice or miscounted:\n%s", s)
	}
	// The clock moves the countdown.
	later := fixedNow.Add(45 * time.Second)
	m.opts.Now = func() time.Time { return later }
	m = step(m, tickMsg(later))
	if s := screen(m); !strings.Contains(s, "tabs close in 1:00 · o keep") {
		t.Fatalf("countdown did not move:\n%s", s)
	}
	m, _ = keys(m, "o")
	if got := f.Calls(); !slices.Equal(got, []string{"keep c5e6"}) {
		t.Fatalf("calls = %v, want keep c5e6", got)
	}
	if !strings.Contains(screen(m), "kept 2 tabs of cursor · Cursor") {
		t.Errorf("no feedback after o:\n%s", screen(m))
	}
}

func TestOActsOnlyOnTheSelectedEndedConversation(t *testing.T) {
	s := endedState()
	s.Selection = consent.Selection{Conversation: "c1a2", Tab: "t1"}
	m, f := newTestModel(s, 80, 24)
	m, _ = keys(m, "o")
	if got := f.Calls(); len(got) != 0 {
		t.Fatalf("calls = %v, want none", got)
	}
	if !strings.Contains(screen(m), "nothing to keep") {
		t.Errorf("no explanation for o off an ended conversation:\n%s", screen(m))
	}
	// The arrows reach the ended conversation: one stop after the last tab.
	_, _ = keys(m, "up")
	if got := f.Calls(); !slices.Equal(got, []string{"select c5e6 "}) {
		t.Fatalf("calls = %v, want the ended conversation selected", got)
	}
}

// TestRealEngineKeepTabs drives o against the real engine with its grace.
func TestRealEngineKeepTabs(t *testing.T) {
	e := consent.New(consent.Config{Now: fixedClock, EndedTabGrace: time.Hour})
	defer e.Close()
	e.AddConversation("c1", "agent one")
	e.PutTab(consent.TabInfo{ID: "t1", Conversation: "c1", URL: "https://shop.example/"})
	e.RemoveConversation("c1")
	m := New(e, Options{Now: fixedClock})
	defer m.Close()
	m, _ = keys(m, "down")
	m = step(m, stateChangedMsg{state: e.Snapshot()})
	if s := screen(m); !strings.Contains(s, "▸ agent one (c1) [ended]") || !strings.Contains(s, "tabs close in 60:00 · o keep") {
		t.Fatalf("ended conversation not selected with its countdown:\n%s", s)
	}
	m, _ = keys(m, "o")
	st := e.Snapshot()
	if len(st.Ended) != 0 || len(st.OperatorTabs) != 1 {
		t.Fatalf("after o: ended %+v, operator tabs %+v", st.Ended, st.OperatorTabs)
	}
	m = step(m, stateChangedMsg{state: st})
	if s := screen(m); strings.Contains(s, "[ended]") || !strings.Contains(s, "Operator tabs (1,") {
		t.Fatalf("kept tab not shown as an operator tab:\n%s", s)
	}
}

// TestTakeOverOnAnEndedConversationSaysItEnded: t and x with the selection
// still on an [ended] line say the conversation ended, not "unknown
// conversation", which the list right there contradicts (issue 25).
func TestTakeOverOnAnEndedConversationSaysItEnded(t *testing.T) {
	e := consent.New(consent.Config{Now: fixedClock, EndedTabGrace: time.Hour})
	defer e.Close()
	e.AddConversation("c1", "agent one")
	e.PutTab(consent.TabInfo{ID: "t1", Conversation: "c1", URL: "https://shop.example/"})
	e.RemoveConversation("c1")
	m := New(e, Options{Now: fixedClock})
	defer m.Close()
	m, _ = keys(m, "down")
	m = step(m, stateChangedMsg{state: e.Snapshot()})
	if s := screen(m); !strings.Contains(s, "▸ agent one (c1) [ended]") {
		t.Fatalf("ended conversation not selected:\n%s", s)
	}
	for _, c := range []struct{ key, what string }{{"t", "take over"}, {"x", "cancel"}} {
		m, _ = keys(m, c.key)
		s := screen(m)
		if strings.Contains(s, "unknown conversation") || !strings.Contains(s, "agent one has ended: nothing to "+c.what) {
			t.Errorf("%s on an ended conversation:\n%s", c.key, s)
		}
	}
	if st := e.Snapshot(); len(st.Ended) != 1 {
		t.Errorf("the ended conversation changed: %+v", st.Ended)
	}
}
