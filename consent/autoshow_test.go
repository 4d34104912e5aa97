package consent

import (
	"context"
	"testing"
	"time"
)

// No review waits unseen (design.md §4): with nothing on screen, a review of
// a tab the operator is not looking at comes on screen by itself, its tab
// selected (and so brought to front); when the review on screen is
// settled, the oldest waiting one follows. The operator moving away from
// a review on purpose does not bring it back, and neither a take-over of
// the selected conversation nor a held screen is interrupted.
func TestNoReviewWaitsUnseen(t *testing.T) {
	h := newHarness(t, Config{ReviewTimeout: 20 * time.Second}).std()
	ev, stop := listenAll(h.e)
	defer stop()
	e := h.e

	// Nothing on screen; c2's tab t3 is not visible.
	ch3 := ask(e, context.Background(), nav("c2", "t3", "https://a.test"))
	r3 := h.focused("t3")
	if got := e.Snapshot().Selection; got != (Selection{"c2", "t3"}) {
		t.Fatalf("the review came up without its tab selected: %+v", got)
	}
	if r3.Deadline.Sub(r3.ShownAt) != 20*time.Second {
		t.Fatalf("shown review timing: %+v", r3)
	}

	// Another review waits behind it; settling the first brings it up.
	ch2 := ask(e, context.Background(), nav("c1", "t2", "https://b.test"))
	h.queued(2)
	if f := e.Snapshot().Focused; f == nil || f.ID != r3.ID {
		t.Fatal("a new review took the screen from the one on it")
	}
	h.decide(r3, true)
	if err := result(t, ch3); err != nil {
		t.Fatal(err)
	}
	r2 := h.focused("t2")
	if got := e.Snapshot().Selection; got != (Selection{"c1", "t2"}) {
		t.Fatalf("selection %+v", got)
	}

	// The operator looks elsewhere on purpose: the review waits, badged.
	e.Select("c2", "t3")
	h.until("the review back in the queue", func(s State) bool { return s.Focused == nil && len(s.Queue) == 1 })
	if e.Snapshot().Selection != (Selection{"c2", "t3"}) {
		t.Fatal("the waiting review pulled the operator back")
	}

	// A take-over of the selected conversation holds the screen too.
	if err := e.TakeOver("c2"); err != nil {
		t.Fatal(err)
	}
	e.Note("c1", "something else changed", false) // any commit re-checks
	ch1 := ask(e, context.Background(), nav("c1", "t1", "https://c.test"))
	h.queued(2)
	if f := e.Snapshot().Focused; f != nil {
		t.Fatalf("a review interrupted the take-over: %+v", f)
	}
	if err := e.Resume("c2"); err != nil {
		t.Fatal(err)
	}

	// A held screen (the task prompt) is not interrupted; letting go
	// brings the oldest waiting review up.
	e.HoldAutoShow(true)
	e.Select("c2", "t3")
	ch1b := ask(e, context.Background(), nav("c1", "t1", "https://d.test"))
	h.queued(3)
	if f := e.Snapshot().Focused; f != nil {
		t.Fatalf("a review took a held screen: %+v", f)
	}
	e.HoldAutoShow(false)
	if r := h.focused("t2"); r.ID != r2.ID {
		t.Fatalf("not the oldest waiting review came up: %+v", r)
	}
	for _, r := range e.Snapshot().Queue {
		_ = e.Decide(r.ID, false)
	}
	time.Sleep(h.cfg.ReviewDelay + 5*time.Millisecond)
	for _, ch := range []<-chan error{ch2, ch1, ch1b} {
		for len(e.Snapshot().Queue) > 0 {
			f := h.until("a review on screen", func(s State) bool { return s.Focused != nil })
			h.decide(*f.Focused, false)
		}
		if err := result(t, ch); err == nil {
			t.Fatal("a denied review allowed")
		}
	}
	// The listener may or may not have caught the selection made when the
	// conversations were added (events are delivered on their own
	// goroutine): the sequence is read from the first auto-show on.
	var selects []TabID
	for _, x := range ev.of(EventSelect) {
		if len(selects) == 0 && x.Tab != "t3" {
			continue
		}
		selects = append(selects, x.Tab)
	}
	if len(selects) < 2 || selects[0] != "t3" || selects[1] != "t2" {
		t.Fatalf("select events %v: the auto-shown reviews' tabs must come to front", selects)
	}
}
