package consent

import (
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tabwarden/tabwarden/consent/audit"
)

// fakeClock is Now and AfterFunc on a clock that only Advance moves.
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	timers []*fakeTimer
}

type fakeTimer struct {
	at      time.Time
	f       func()
	stopped bool
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) AfterFunc(d time.Duration, f func()) func() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &fakeTimer{at: c.now.Add(d), f: f}
	c.timers = append(c.timers, t)
	return func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		was := !t.stopped
		t.stopped = true
		return was
	}
}

// Advance moves the clock by d and runs, in order, every timer due by then.
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	var due []*fakeTimer
	for _, t := range c.timers {
		if !t.stopped && !t.at.After(c.now) {
			t.stopped = true
			due = append(due, t)
		}
	}
	c.mu.Unlock()
	for _, t := range due {
		t.f()
	}
}

const tGrace = 2 * time.Minute

// flush returns once every event the engine emitted so far has reached ev:
// events come in order, so it waits for a take-over of its own.
func flush(t *testing.T, e *Engine, ev *events) {
	t.Helper()
	e.AddConversation("flush", "flush")
	if err := e.TakeOver("flush"); err != nil {
		t.Fatal(err)
	}
	ev.waitFor(t, EventTakeOver)
}

func graceHarness(t *testing.T) (*harness, *fakeClock) {
	clk := newFakeClock()
	h := newHarness(t, Config{Profile: ProfileTrusted, Now: clk.Now, AfterFunc: clk.AfterFunc, EndedTabGrace: tGrace}).std()
	return h, clk
}

func endedOf(st State, id ConversationID) *EndedConversation {
	for i := range st.Ended {
		if st.Ended[i].ID == id {
			return &st.Ended[i]
		}
	}
	return nil
}

func TestEndedConversationTabsCloseAfterTheGrace(t *testing.T) {
	h, clk := graceHarness(t)
	ev, stop := listenAll(h.e)
	defer stop()
	start := clk.Now()
	h.e.RemoveConversation("c1")

	st := h.e.Snapshot()
	en := endedOf(st, "c1")
	if en == nil || en.Name != "one" || !slices.Equal(en.Tabs, []TabID{"t1", "t2"}) ||
		!en.EndedAt.Equal(start) || !en.CloseAt.Equal(start.Add(tGrace)) {
		t.Fatalf("ended conversations %+v", st.Ended)
	}
	// Meanwhile the tabs are the operator's: no agent can use them.
	if len(st.OperatorTabs) != 2 {
		t.Fatalf("operator tabs %+v", st.OperatorTabs)
	}
	if owner, _ := h.e.Owner("t1"); owner != "" {
		t.Fatalf("t1 owned by %q during the grace", owner)
	}
	if !strings.Contains(st.Activity[len(st.Activity)-1].Text, "its 2 tabs close in 2:00 unless you keep them (o)") {
		t.Fatalf("activity %+v", st.Activity[len(st.Activity)-1])
	}

	clk.Advance(tGrace - time.Second)
	if len(ev.of(EventCloseTabs)) != 0 || endedOf(h.e.Snapshot(), "c1") == nil {
		t.Fatalf("tabs closed before the grace was over: %v", ev.kinds())
	}
	clk.Advance(time.Second)
	x := ev.waitFor(t, EventCloseTabs)
	if x.Conversation != "c1" || !slices.Equal(x.Tabs, []TabID{"t1", "t2"}) {
		t.Fatalf("close event %+v", x)
	}
	if en := endedOf(h.e.Snapshot(), "c1"); en != nil {
		t.Fatalf("still ended after closing: %+v", en)
	}
	var notes []string
	for _, r := range h.mem.Kind(audit.KindSession) {
		notes = append(notes, r.By+": "+r.Note)
	}
	if !slices.Contains(notes, "engine: closing 2 tabs of the ended conversation after 2:00") {
		t.Fatalf("audit notes %q", notes)
	}
	// The grace fires once.
	clk.Advance(tGrace)
	flush(t, h.e, ev)
	if n := len(ev.of(EventCloseTabs)); n != 1 {
		t.Fatalf("%d close events", n)
	}
}

func TestKeepTabsOfAnEndedConversation(t *testing.T) {
	h, clk := graceHarness(t)
	ev, stop := listenAll(h.e)
	defer stop()
	h.e.RemoveConversation("c1")
	h.e.Select("c1", "")
	if sel := h.e.Snapshot().Selection; sel != (Selection{Conversation: "c1"}) {
		t.Fatalf("the ended conversation is not selectable: %+v", sel)
	}
	if err := h.e.KeepTabs("c1"); err != nil {
		t.Fatal(err)
	}
	st := h.e.Snapshot()
	if len(st.Ended) != 0 || len(st.OperatorTabs) != 2 {
		t.Fatalf("after keep: ended %+v operator tabs %d", st.Ended, len(st.OperatorTabs))
	}
	if st.Selection.Conversation != "c2" {
		t.Fatalf("selection stayed on the kept conversation: %+v", st.Selection)
	}
	clk.Advance(2 * tGrace)
	flush(t, h.e, ev)
	if n := len(ev.of(EventCloseTabs)); n != 0 {
		t.Fatalf("kept tabs closed: %v", ev.kinds())
	}
	if err := h.e.KeepTabs("c1"); err != ErrUnknownConversation {
		t.Fatalf("second keep: %v", err)
	}
	if err := h.e.KeepTabs("c2"); err != ErrUnknownConversation {
		t.Fatalf("keep of a live conversation: %v", err)
	}
	found := false
	for _, r := range h.mem.Kind(audit.KindSession) {
		found = found || (r.By == "operator" && r.Conversation == "c1" && r.Note == "kept 2 tabs of the ended conversation")
	}
	if !found {
		t.Fatalf("keep not audited: %+v", h.mem.Records())
	}
}

func TestEndedGraceFollowsItsTabs(t *testing.T) {
	h, clk := graceHarness(t)
	ev, stop := listenAll(h.e)
	defer stop()
	h.e.RemoveConversation("c1")
	// A popup the browser reports for the ended conversation joins its grace.
	h.e.PutTab(TabInfo{ID: "t9", Conversation: "c1", URL: "about:blank"})
	if en := endedOf(h.e.Snapshot(), "c1"); en == nil || !slices.Equal(en.Tabs, []TabID{"t1", "t2", "t9"}) {
		t.Fatalf("ended %+v", h.e.Snapshot().Ended)
	}
	if owner, _ := h.e.Owner("t9"); owner != "" {
		t.Fatalf("a late tab of an ended conversation is owned by %q", owner)
	}
	// A tab closed meanwhile is not closed again.
	h.e.RemoveTab("t2")
	clk.Advance(tGrace)
	if x := ev.waitFor(t, EventCloseTabs); !slices.Equal(x.Tabs, []TabID{"t1", "t9"}) {
		t.Fatalf("close event %+v", x)
	}

	// Every tab gone before the grace is over: nothing left to show or close.
	h.e.RemoveConversation("c2")
	if endedOf(h.e.Snapshot(), "c2") == nil {
		t.Fatalf("c2 not ended with its tab")
	}
	h.e.RemoveTab("t3")
	if st := h.e.Snapshot(); len(st.Ended) != 0 {
		t.Fatalf("ended with no tabs: %+v", st.Ended)
	}
	clk.Advance(tGrace)
	flush(t, h.e, ev)
	if n := len(ev.of(EventCloseTabs)); n != 1 {
		t.Fatalf("%d close events", n)
	}

	// A conversation with no tabs leaves no grace at all.
	h.e.AddConversation("c3", "three")
	h.e.RemoveConversation("c3")
	if st := h.e.Snapshot(); len(st.Ended) != 0 {
		t.Fatalf("tab-less conversation ended with a grace: %+v", st.Ended)
	}
}

func TestEngineCloseStopsTheGrace(t *testing.T) {
	h, clk := graceHarness(t)
	ev, stop := listenAll(h.e)
	h.e.RemoveConversation("c1")
	h.e.Close()
	clk.Advance(tGrace)
	stop()
	if n := len(ev.of(EventCloseTabs)); n != 0 {
		t.Fatalf("a closed engine closed tabs: %v", ev.kinds())
	}
}

func TestDefaultEndedTabGrace(t *testing.T) {
	var got time.Duration
	e := New(Config{AfterFunc: func(d time.Duration, f func()) func() bool { got = d; return func() bool { return true } }})
	defer e.Close()
	e.AddConversation("c1", "one")
	e.PutTab(TabInfo{ID: "t1", Conversation: "c1"})
	e.RemoveConversation("c1")
	if got != DefaultEndedTabGrace || DefaultEndedTabGrace != 2*time.Minute {
		t.Fatalf("grace %v", got)
	}
}
