package consent

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/tabwarden/tabwarden/consent/errcode"
)

func TestListenerOrderAndNoDrops(t *testing.T) {
	h := newHarness(t, Config{ReviewDelay: tGuard})
	ev, stop := listenAll(h.e)
	defer stop()
	// A listener that blocks must not block the engine: Decide and Ask still
	// return while it is stuck.
	release := make(chan struct{})
	stuck := h.e.Listen(func(Event) { <-release })
	defer stuck()
	h.std()
	ch := ask(h.e, context.Background(), nav("c1", "t1", "https://a.test"))
	r := h.focused("t1")
	if err := h.e.Decide(r.ID, true); !errors.Is(err, ErrTooEarly) {
		t.Fatalf("early key: %v", err)
	}
	h.decide(r, true)
	if err := result(t, ch); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 100; i++ {
		if err := h.e.TakeOver("c1"); err != nil {
			t.Fatal(err)
		}
		if err := h.e.Resume("c1"); err != nil {
			t.Fatal(err)
		}
	}
	if err := h.e.Cancel("c1"); err != nil {
		t.Fatal(err)
	}
	close(release)
	ev.waitFor(t, EventCancel)
	want := []EventKind{EventSelect, EventReviewShown, EventKeyIgnored, EventDecision}
	for i := 0; i < 100; i++ {
		want = append(want, EventTakeOver, EventResume)
	}
	want = append(want, EventCancel)
	got := ev.kinds()
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("events out of order or dropped:\n got %v\nwant %v", got, want)
	}
	ev.mu.Lock()
	dec := ev.evs[3]
	ev.mu.Unlock()
	if !dec.Approved || dec.Review == nil || dec.Review.ID != r.ID {
		t.Fatalf("decision event %+v", dec)
	}
}

func TestListenerMayCallEngine(t *testing.T) {
	h := newHarness(t, Config{})
	got := make(chan State, 1)
	stop := h.e.Listen(func(x Event) {
		if x.Kind == EventSelect {
			select {
			case got <- h.e.Snapshot():
			default:
			}
		}
	})
	defer stop()
	h.std()
	select {
	case st := <-got:
		if st.Selection.Tab == "" {
			t.Fatalf("snapshot from listener %+v", st.Selection)
		}
	case <-time.After(waitLimit):
		t.Fatal("listener that calls the engine deadlocked")
	}
}

func TestWaitIdle(t *testing.T) {
	h := newHarness(t, Config{}).std()
	if err := h.e.WaitIdle(context.Background()); err != nil {
		t.Fatal(err)
	}
	op, err := h.e.Begin(context.Background(), "c1", "t1", "act")
	if err != nil {
		t.Fatal(err)
	}
	ch := ask(h.e, context.Background(), act("c1", "t1", ActionClick))
	r := h.focused("t1")
	idle := make(chan error, 1)
	go func() { idle <- h.e.WaitIdle(context.Background()) }()

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := h.e.WaitIdle(ctx); err == nil {
		t.Fatal("not idle while a review is pending")
	}
	h.decide(r, true)
	if err := result(t, ch); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-idle:
		t.Fatalf("not idle while the op runs (WaitIdle returned %v)", err)
	default:
	}
	op.End()
	select {
	case err := <-idle:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(waitLimit):
		t.Fatal("WaitIdle did not return after the op ended")
	}
}

func TestSnapshotBadgesAndImmutability(t *testing.T) {
	h := newHarness(t, Config{}).std()
	// The operator holds the screen (a prompt is open): reviews wait in
	// the queue rather than come up by themselves.
	h.e.HoldAutoShow(true)
	e := h.e
	e.PutTab(TabInfo{ID: "t2", Conversation: "c1", URL: "https://a.test/x", BlockedRequests: 2, Loading: true})
	e.PutTab(TabInfo{ID: "op1"})
	if err := h.approveAsk(nav("c1", "t1", "https://a.test")); err != nil {
		t.Fatal(err)
	}
	op, err := e.Begin(context.Background(), "c1", "t1", "observe")
	if err != nil {
		t.Fatal(err)
	}
	defer op.End()
	fill := act("c2", "t3", ActionFill)
	fill.Action.Text = "abc"
	ch := ask(e, context.Background(), fill)
	st := h.queued(1)

	if len(st.Conversations) != 2 || st.Conversations[0].ID != "c1" || st.Conversations[1].ID != "c2" {
		t.Fatalf("conversations by creation: %+v", st.Conversations)
	}
	c1 := st.Conversations[0]
	if !c1.Running || c1.NeedsAttention || c1.Tabs[0].ID != "t1" || c1.Tabs[1].ID != "t2" {
		t.Fatalf("c1 %+v", c1)
	}
	t1, t2 := c1.Tabs[0], c1.Tabs[1]
	if t1.Status != TabRunning || !t1.Visible || len(t1.NavigationGrant) != 1 || t1.NavigationGrant[0] != "https://a.test" {
		t.Fatalf("t1 %+v", t1)
	}
	if t2.Status != TabLoading || !t2.Blocked || t2.Visible {
		t.Fatalf("t2 %+v", t2)
	}
	c2 := st.Conversations[1]
	if !c2.NeedsAttention || !c2.Tabs[0].NeedsAttention || c2.Running {
		t.Fatalf("c2 %+v", c2)
	}
	if len(st.OperatorTabs) != 1 || st.OperatorTabs[0].ID != "op1" {
		t.Fatalf("operator tabs %+v", st.OperatorTabs)
	}

	// Mutating a snapshot changes nothing in the engine.
	st.Queue[0].Action.Text = "changed"
	st.Conversations[0].Grants[0] = "changed"
	st.Conversations[0].Tabs[0].NavigationGrant[0] = "changed"
	again := e.Snapshot()
	if again.Queue[0].Action.Text != "abc" || again.Conversations[0].Grants[0] != "navigation https://a.test in tab t1" ||
		again.Conversations[0].Tabs[0].NavigationGrant[0] != "https://a.test" {
		t.Fatal("snapshot shares memory with the engine")
	}
	// Nor does mutating the request after asking.
	fill.Action.Text = "mutated"
	if e.Snapshot().Queue[0].Action.Text != "abc" {
		t.Fatal("review shares the caller's action")
	}

	e.Select("c2", "")
	h.decide(h.focused("t3"), false)
	wantCode(t, result(t, ch), errcode.UserDenied)
}

func TestDisclosureResultDroppedOnResolve(t *testing.T) {
	h := newHarness(t, Config{}).std()
	ev, stop := listenAll(h.e)
	defer stop()
	ch := ask(h.e, context.Background(), disclose("c1", "t1", `{"a":1}`))
	h.decide(h.focused("t1"), true)
	if err := result(t, ch); err != nil {
		t.Fatal(err)
	}
	if d := ev.waitFor(t, EventDecision); d.Review.Disclosure != nil {
		t.Fatal("a resolved disclosure must not keep the result")
	}
}

func TestActivityIsBounded(t *testing.T) {
	h := newHarness(t, Config{})
	for i := 0; i < ActivityLimit+50; i++ {
		h.e.Note("c1", fmt.Sprintf("line %d", i), false)
	}
	act := h.e.Snapshot().Activity
	if len(act) != ActivityLimit {
		t.Fatalf("activity length %d", len(act))
	}
	if act[0].Text != "line 50" || act[len(act)-1].Text != fmt.Sprintf("line %d", ActivityLimit+49) {
		t.Fatalf("oldest dropped first, newest last: %q .. %q", act[0].Text, act[len(act)-1].Text)
	}
}

func TestChangesCoalesce(t *testing.T) {
	e := New(Config{})
	defer e.Close()
	ch, unsub := e.Changes()
	for i := 0; i < 10; i++ {
		e.Note("", "x", false)
	}
	if len(ch) != 1 || cap(ch) != 1 {
		t.Fatalf("coalescing channel holds %d of %d", len(ch), cap(ch))
	}
	<-ch
	unsub()
	e.Note("", "y", false)
	if len(ch) != 0 {
		t.Fatal("unsubscribed channel still signalled")
	}
}

func TestCloseEndsEverythingWithoutLeaks(t *testing.T) {
	base := runtime.NumGoroutine()
	e := New(Config{ReviewDelay: tDelay, ReviewTimeout: time.Minute, OpDeadline: time.Minute})
	e.AddConversation("c1", "one")
	e.PutTab(TabInfo{ID: "t1", Conversation: "c1"})
	e.PutTab(TabInfo{ID: "t2", Conversation: "c1"})
	delivered := make(chan Event, 64)
	e.Listen(func(x Event) { delivered <- x })
	op, err := e.Begin(context.Background(), "c1", "t1", "act")
	if err != nil {
		t.Fatal(err)
	}
	a1 := ask(e, context.Background(), act("c1", "t1", ActionClick))
	a2 := ask(e, context.Background(), nav("c1", "t2", "https://a.test"))
	changes, _ := e.Changes()
	for len(e.Snapshot().Queue) < 2 {
		<-changes
	}
	e.Close()
	e.Close()
	wantCode(t, result(t, a1), errcode.Canceled)
	wantCode(t, result(t, a2), errcode.Canceled)
	if op.Context().Err() == nil {
		t.Fatal("Close must end running ops")
	}
	_, err = e.Begin(context.Background(), "c1", "t2", "x")
	wantCode(t, err, errcode.Canceled)
	op.End()
	if err := e.WaitIdle(context.Background()); err != nil {
		t.Fatal(err)
	}
	// Events queued before Close were delivered before it returned.
	var decisions int
	for len(delivered) > 0 {
		if x := <-delivered; x.Kind == EventDecision {
			decisions++
		}
	}
	if decisions != 2 {
		t.Fatalf("decision events delivered before Close returned: %d", decisions)
	}
	// Timer callbacks that already fired may still be returning; allow them
	// to finish, then require the count to be back at the baseline.
	deadline := time.Now().Add(waitLimit)
	for runtime.NumGoroutine() > base {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<16)
			t.Fatalf("goroutines leaked: %d > %d\n%s", runtime.NumGoroutine(), base, buf[:runtime.Stack(buf, true)])
		}
		runtime.Gosched()
		time.Sleep(time.Millisecond)
	}
}
