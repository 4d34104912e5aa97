package consent

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tabwarden/tabwarden/consent/audit"
	"github.com/tabwarden/tabwarden/consent/audit/audittest"
	"github.com/tabwarden/tabwarden/consent/errcode"
)

func TestNavigationGrantScope(t *testing.T) {
	h := newHarness(t, Config{}).std()
	h.e.PutTab(TabInfo{ID: "t4", Conversation: "c2"})
	if err := h.approveAsk(nav("c1", "t1", "https://a.test")); err != nil {
		t.Fatal(err)
	}
	for _, req := range []Request{
		nav("c1", "t1", "https://a.test"),
		nav("c1", "t1", "https://A.TEST:443"),
		nav("c1", "t1", "https://a.test/other/path"),
	} {
		if !h.e.Covered(req) {
			t.Errorf("same origin, tab and conversation must be covered: %s", req.Origin)
		}
	}
	for _, req := range []Request{
		nav("c1", "t2", "https://a.test"),      // another tab
		nav("c2", "t3", "https://a.test"),      // another conversation
		nav("c2", "t1", "https://a.test"),      // another conversation naming c1's tab
		nav("c1", "t1", "http://a.test"),       // another scheme
		nav("c1", "t1", "https://a.test:8443"), // another port
		nav("c1", "t1", "https://b.test"),      // another host
		nav("c1", "t1", "https://sub.a.test"),  // a subdomain is another origin
		read("c1", "t1", "https://a.test"),     // another gate
		nav("c1", "missing", "https://a.test"), // unknown tab
		nav("", "t1", "https://a.test"),        // no conversation
		nav("c1", "t1", "::not an origin::"),   // malformed
	} {
		if h.e.Covered(req) {
			t.Errorf("must not be covered: %+v", req)
		}
	}
	// The uncovered request in another tab really asks.
	ch := ask(h.e, context.Background(), nav("c1", "t2", "https://a.test"))
	h.e.Select("c1", "t2")
	h.decide(h.focused("t2"), false)
	wantCode(t, result(t, ch), errcode.UserDenied)
}

func TestReadGrantScope(t *testing.T) {
	h := newHarness(t, Config{}).std()
	if err := h.approveAsk(read("c1", "t1", "https://a.test")); err != nil {
		t.Fatal(err)
	}
	if !h.e.Covered(read("c1", "t2", "https://a.test")) {
		t.Error("read grant is origin × conversation: other tab of c1 covered")
	}
	for _, req := range []Request{
		read("c2", "t3", "https://a.test"),
		read("c1", "t1", "https://a.test:444"),
		read("c1", "t1", "http://a.test"),
	} {
		if h.e.Covered(req) {
			t.Errorf("must not be covered: %+v", req)
		}
	}
}

func TestOwnershipChecks(t *testing.T) {
	h := newHarness(t, Config{}).std()
	h.e.PutTab(TabInfo{ID: "op1", URL: "https://mail.test"})
	ctx := context.Background()

	_, err := h.e.Begin(ctx, "c1", "op1", "observe")
	wantCode(t, err, errcode.WrongConversation)
	wantCode(t, h.e.Ask(ctx, nav("c1", "op1", "https://a.test")), errcode.WrongConversation)
	_, err = h.e.Begin(ctx, "c1", "t3", "observe")
	wantCode(t, err, errcode.WrongConversation)
	_, err = h.e.Begin(ctx, "", "t1", "observe")
	wantCode(t, err, errcode.MissingSession)
	_, err = h.e.Begin(ctx, "nobody", "t1", "observe")
	wantCode(t, err, errcode.MissingSession)
	_, err = h.e.Begin(ctx, "c1", "gone", "observe")
	wantCode(t, err, errcode.TabClosed)

	st := h.e.Snapshot()
	if len(st.OperatorTabs) != 1 || st.OperatorTabs[0].ID != "op1" {
		t.Fatalf("operator tabs %+v", st.OperatorTabs)
	}
	// A tab reported for an unknown conversation is nobody's: untouchable.
	h.e.PutTab(TabInfo{ID: "stray", Conversation: "ghost"})
	if c, ok := h.e.Owner("stray"); !ok || c != "" {
		t.Fatalf("stray tab owner %q %v", c, ok)
	}
	if c, ok := h.e.Owner("t1"); !ok || c != "c1" {
		t.Fatalf("owner of t1 %q %v", c, ok)
	}
}

func TestSelectionAndVisibility(t *testing.T) {
	h := newHarness(t, Config{ReviewTimeout: 3 * time.Second})
	ev, stop := listenAll(h.e)
	defer stop()
	h.std()
	e := h.e
	// The operator holds the screen (a prompt is open): reviews wait in
	// the queue rather than come up by themselves.
	h.e.HoldAutoShow(true)

	st := e.Snapshot()
	if st.Selection != (Selection{"c1", "t1"}) {
		t.Fatalf("first conversation and its first tab must be selected: %+v", st.Selection)
	}
	// A review in an invisible tab of another conversation waits, badged.
	ch := ask(e, context.Background(), nav("c2", "t3", "https://a.test"))
	st = h.queued(1)
	if st.Focused != nil {
		t.Fatal("a review of an invisible tab must not be on screen")
	}
	if !st.Conversations[1].NeedsAttention || !st.Conversations[1].Tabs[0].NeedsAttention {
		t.Fatalf("needs-attention badge missing: %+v", st.Conversations[1])
	}
	if st.Queue[0].ShownAt != (time.Time{}) {
		t.Fatal("a queued review has no ShownAt")
	}

	// An agent cannot switch the operator to its conversation.
	e.FocusTab("t3")
	if e.Snapshot().Selection.Conversation != "c1" {
		t.Fatal("FocusTab must not change the selected conversation")
	}
	e.FocusTab("t2")
	if got := e.Snapshot().Selection; got != (Selection{"c1", "t2"}) {
		t.Fatalf("FocusTab within the selected conversation: %+v", got)
	}

	e.PutTab(TabInfo{ID: "t4", Conversation: "c2"})
	e.Select("c2", "") // picks t3, the tab with the oldest review, not first-created t3/t4 order alone
	r := h.focused("t3")
	if r.ShownAt.IsZero() || r.Deadline.Sub(r.ShownAt) != 3*time.Second {
		t.Fatalf("shown review timing: %+v", r)
	}
	h.decide(r, true)
	if err := result(t, ch); err != nil {
		t.Fatal(err)
	}
	e.Select("c2", "")
	if got := e.Snapshot().Selection; got != (Selection{"c2", "t3"}) {
		t.Fatalf("no pending review: first tab, got %+v", got)
	}
	e.Select("c2", "t1") // not c2's tab
	if got := e.Snapshot().Selection; got != (Selection{"c2", "t3"}) {
		t.Fatalf("Select with a foreign tab must be ignored: %+v", got)
	}
	// Events arrive in order: once the later take-over is delivered, every
	// select before it has been.
	if err := e.TakeOver("c2"); err != nil {
		t.Fatal(err)
	}
	ev.waitFor(t, EventTakeOver)
	var selects []TabID
	for _, x := range ev.of(EventSelect) {
		selects = append(selects, x.Tab)
	}
	// t1: first tab of the auto-selected conversation; t2: FocusTab; t3:
	// Select. Repeating a selection or ignored moves send nothing.
	if len(selects) != 3 || selects[0] != "t1" || selects[1] != "t2" || selects[2] != "t3" {
		t.Fatalf("select events %v", selects)
	}
}

func TestReviewLeavesScreenAndGuardRestarts(t *testing.T) {
	h := newHarness(t, Config{ReviewDelay: tGuard}).std()
	ch := ask(h.e, context.Background(), nav("c1", "t1", "https://a.test"))
	r := h.focused("t1")
	time.Sleep(tGuard + 10*time.Millisecond) // let the guard pass once
	h.e.Select("c2", "")
	st := h.until("review back in queue", func(s State) bool { return s.Focused == nil })
	if !st.Queue[0].ShownAt.IsZero() || !st.Queue[0].Deadline.IsZero() {
		t.Fatalf("unfocused review keeps timing: %+v", st.Queue[0])
	}
	if err := h.e.Decide(r.ID, true); !errors.Is(err, ErrNotShown) {
		t.Fatalf("Decide on a queued review: %v", err)
	}
	h.e.Select("c1", "")
	r2 := h.focused("t1")
	if !r2.ShownAt.After(r.ShownAt) {
		t.Fatal("ShownAt must reset when the review comes back")
	}
	if err := h.e.Decide(r2.ID, true); !errors.Is(err, ErrTooEarly) {
		t.Fatalf("guard must apply afresh: %v", err)
	}
	h.decide(r2, true)
	if err := result(t, ch); err != nil {
		t.Fatal(err)
	}
	if n := len(h.mem.Kind(audit.KindReviewShown)); n != 2 {
		t.Fatalf("review shown twice, audited %d", n)
	}
}

func TestKeyAheadGuard(t *testing.T) {
	h := newHarness(t, Config{ReviewDelay: tGuard}).std()
	ev, stop := listenAll(h.e)
	defer stop()
	ch := ask(h.e, context.Background(), nav("c1", "t1", "https://a.test"))
	r := h.focused("t1")
	if err := h.e.Decide(r.ID, true); !errors.Is(err, ErrTooEarly) {
		t.Fatalf("immediate Decide: %v", err)
	}
	st := h.e.Snapshot()
	if st.Focused == nil || st.Focused.ID != r.ID {
		t.Fatal("an ignored key must leave the review pending")
	}
	last := st.Activity[len(st.Activity)-1]
	if last.Text != "key ignored: review just appeared (local pressed a)" || !last.Warn {
		t.Fatalf("activity %+v", last)
	}
	if k := ev.waitFor(t, EventKeyIgnored); k.Review == nil || k.Review.ID != r.ID {
		t.Fatalf("key ignored event %+v", k)
	}
	if recs := h.mem.Kind(audit.KindKeyIgnored); len(recs) != 1 || recs[0].Review != r.ID {
		t.Fatalf("key ignored audit %+v", recs)
	}
	if err := h.e.Decide("r999", true); !errors.Is(err, ErrNoSuchReview) {
		t.Fatalf("unknown review: %v", err)
	}
	h.decide(r, true)
	if err := result(t, ch); err != nil {
		t.Fatal(err)
	}
	if err := h.e.Decide(r.ID, false); !errors.Is(err, ErrNoSuchReview) {
		t.Fatalf("late decision: %v", err)
	}
}

func TestFocusedReviewTimesOut(t *testing.T) {
	h := newHarness(t, Config{ReviewTimeout: tTimeout}).std()
	ch := ask(h.e, context.Background(), nav("c1", "t1", "https://a.test"))
	h.focused("t1")
	wantCode(t, result(t, ch), errcode.Timeout)
	recs := h.mem.Kind(audit.KindDecision)
	if len(recs) != 1 || recs[0].Decision != "timeout" || recs[0].By != "engine" {
		t.Fatalf("decision audit %+v", recs)
	}
	if h.e.Covered(nav("c1", "t1", "https://a.test")) {
		t.Fatal("a timeout grants nothing")
	}
	ch = ask(h.e, context.Background(), disclose("c1", "t1", "{}"))
	h.focused("t1")
	wantCode(t, result(t, ch), errcode.DisclosureTimeout)
}

func TestHeldRequestWithoutOpNeedsAttention(t *testing.T) {
	h := newHarness(t, Config{ReviewTimeout: tTimeout}).std()
	// The operator holds the screen (a prompt is open): reviews wait in
	// the queue rather than come up by themselves.
	h.e.HoldAutoShow(true)
	// A popup's first request, held by the hook: no op on t2, t2 not visible.
	ch := ask(h.e, context.Background(), nav("c1", "t2", "https://popup.test"))
	ce := wantCodeErr(t, result(t, ch), errcode.NeedsAttention)
	if ce.Next != errcode.NextReview {
		t.Fatalf("next %q", ce.Next)
	}
	if recs := h.mem.Kind(audit.KindDecision); len(recs) != 1 || recs[0].Decision != "needs_attention" {
		t.Fatalf("audit %+v", recs)
	}
}

func TestOpDeadlineExcludesFocusedWait(t *testing.T) {
	h := newHarness(t, Config{OpDeadline: 250 * time.Millisecond}).std()
	op, err := h.e.Begin(context.Background(), "c1", "t1", "navigate")
	if err != nil {
		t.Fatal(err)
	}
	defer op.End()
	ch := ask(h.e, op.Context(), nav("c1", "t1", "https://a.test"))
	r := h.focused("t1")
	time.Sleep(600 * time.Millisecond) // the operator reads the panel: longer than the op budget
	if err := h.e.Decide(r.ID, true); err != nil {
		t.Fatal(err)
	}
	if err := result(t, ch); err != nil {
		t.Fatalf("ask after a long on-screen review: %v", err)
	}
	if op.Context().Err() != nil || op.Err() != nil {
		t.Fatalf("op must still be alive: %v", op.Err())
	}
	// The budget resumes afterwards and runs out with timeout.
	select {
	case <-op.Context().Done():
	case <-time.After(waitLimit):
		t.Fatal("op budget never ran out")
	}
	wantCode(t, op.Err(), errcode.Timeout)
}

// A queued review waits the full ReviewTimeout, like one on screen, and
// the wait does not spend its op's budget (design.md §3, §4): the op's 300 ms
// budget passes several times over while the review waits; then the
// review needs attention, its op still alive.
func TestQueuedReviewWaitsTheFullReviewTimeout(t *testing.T) {
	const reviewTimeout = 1500 * time.Millisecond
	h := newHarness(t, Config{OpDeadline: tOp, ReviewTimeout: reviewTimeout}).std()
	// The operator holds the screen (a prompt is open): reviews wait in
	// the queue rather than come up by themselves.
	h.e.HoldAutoShow(true)
	op, err := h.e.Begin(context.Background(), "c1", "t2", "navigate")
	if err != nil {
		t.Fatal(err)
	}
	defer op.End()
	asked := time.Now()
	ch := ask(h.e, op.Context(), nav("c1", "t2", "https://a.test"))
	h.queued(1)
	// No signal says "nothing happened": let the op's budget pass 3 times.
	time.Sleep(3 * tOp)
	if op.Context().Err() != nil || len(h.e.Snapshot().Queue) != 1 {
		t.Fatalf("the queued review ended with its op's budget: %v", op.Err())
	}
	ce := wantCodeErr(t, result(t, ch), errcode.NeedsAttention)
	if waited := time.Since(asked); waited < reviewTimeout {
		t.Fatalf("the queued review gave up after %v, before the review timeout %v", waited, reviewTimeout)
	}
	if ce.Next != errcode.NextReview {
		t.Fatalf("next %q", ce.Next)
	}
	if len(h.e.Snapshot().Queue) != 0 {
		t.Fatal("the review must leave the queue")
	}
}

func TestBusy(t *testing.T) {
	h := newHarness(t, Config{}).std()
	ctx := context.Background()
	op, err := h.e.Begin(ctx, "c1", "t1", "observe")
	if err != nil {
		t.Fatal(err)
	}
	_, err = h.e.Begin(ctx, "c1", "t1", "act")
	wantCode(t, err, errcode.Busy)
	if ts := h.e.Snapshot().Conversations[0].Tabs[0]; ts.Status != TabRunning || ts.Operation != "observe" {
		t.Fatalf("running badge %+v", ts)
	}
	op.End()
	op.End() // idempotent
	op2, err := h.e.Begin(ctx, "c1", "t1", "act")
	if err != nil {
		t.Fatalf("tab freed by End: %v", err)
	}
	defer op2.End()

	// Ops with no tab never conflict; BindTab makes later Begins busy.
	open1, err := h.e.Begin(ctx, "c1", "", "open")
	if err != nil {
		t.Fatal(err)
	}
	open2, err := h.e.Begin(ctx, "c1", "", "open")
	if err != nil {
		t.Fatal(err)
	}
	defer open1.End()
	defer open2.End()
	open1.BindTab("t2")
	_, err = h.e.Begin(ctx, "c1", "t2", "observe")
	wantCode(t, err, errcode.Busy)
	open2.BindTab("t2") // held by open1: no effect
	open1.End()
	if _, err := h.e.Begin(ctx, "c1", "t2", "observe"); err != nil {
		t.Fatalf("open2 must not have taken t2: %v", err)
	}
}

func TestTakeOverRevokesAndPauses(t *testing.T) {
	h := newHarness(t, Config{Profile: ProfileThread}).std()
	ev, stop := listenAll(h.e)
	defer stop()
	e := h.e
	if err := h.approveAsk(read("c1", "t1", "https://a.test")); err != nil { // thread grant
		t.Fatal(err)
	}
	op, err := e.Begin(context.Background(), "c1", "t1", "act")
	if err != nil {
		t.Fatal(err)
	}
	defer op.End()
	ch := ask(e, op.Context(), act("c1", "t1", ActionClick))
	h.focused("t1")
	if err := e.TakeOver("c1"); err != nil {
		t.Fatal(err)
	}
	ce := wantCodeErr(t, result(t, ch), errcode.Paused)
	if ce.Next != errcode.NextUserResume {
		t.Fatalf("next %q", ce.Next)
	}
	<-op.Context().Done()
	if ce := wantCodeErr(t, op.Err(), errcode.Paused); ce.Next != errcode.NextUserResume {
		t.Fatalf("op next %q", ce.Next)
	}
	if !e.Paused("c1") || e.Paused("c2") {
		t.Fatal("paused flag")
	}
	_, err = e.Begin(context.Background(), "c1", "t2", "observe")
	wantCode(t, err, errcode.Paused)
	wantCode(t, e.Ask(context.Background(), read("c1", "t2", "https://a.test")), errcode.Paused)
	st := e.Snapshot()
	if c := st.Conversations[0]; !c.Paused || len(c.Grants) != 0 || c.Tabs[0].Status != TabPaused {
		t.Fatalf("paused conversation state %+v", c)
	}
	ev.waitFor(t, EventTakeOver)
	if err := e.Resume("c1"); err != nil {
		t.Fatal(err)
	}
	ev.waitFor(t, EventResume)
	if e.Covered(nav("c1", "t1", "https://a.test")) {
		t.Fatal("grants must not come back on resume")
	}
	if err := e.TakeOver("nobody"); !errors.Is(err, ErrUnknownConversation) {
		t.Fatalf("unknown conversation: %v", err)
	}
	if len(h.mem.Kind(audit.KindTakeOver)) != 1 || len(h.mem.Kind(audit.KindResume)) != 1 {
		t.Fatal("take-over and resume must be audited")
	}
	recs := h.mem.Kind(audit.KindDecision)
	if last := recs[len(recs)-1]; last.Decision != "paused" || last.By != "operator" {
		t.Fatalf("decision %+v", last)
	}
}

func TestStrictTakeOverRevokesNavigationKeepsRead(t *testing.T) {
	h := newHarness(t, Config{}).std()
	if err := h.approveAsk(nav("c1", "t1", "https://a.test")); err != nil {
		t.Fatal(err)
	}
	if err := h.approveAsk(read("c1", "t1", "https://a.test")); err != nil {
		t.Fatal(err)
	}
	if err := h.e.TakeOver("c1"); err != nil {
		t.Fatal(err)
	}
	if err := h.e.Resume("c1"); err != nil {
		t.Fatal(err)
	}
	if h.e.Covered(nav("c1", "t1", "https://a.test")) {
		t.Fatal("navigation grant must be revoked by take-over")
	}
	if !h.e.Covered(read("c1", "t1", "https://a.test")) {
		t.Fatal("read grant is not a navigation grant: it stays")
	}
}

func TestCancel(t *testing.T) {
	h := newHarness(t, Config{}).std()
	ev, stop := listenAll(h.e)
	defer stop()
	e := h.e
	if err := h.approveAsk(nav("c1", "t1", "https://a.test")); err != nil {
		t.Fatal(err)
	}
	if err := h.approveAsk(read("c1", "t1", "https://a.test")); err != nil {
		t.Fatal(err)
	}
	op, err := e.Begin(context.Background(), "c1", "t2", "act")
	if err != nil {
		t.Fatal(err)
	}
	defer op.End()
	ch := ask(e, op.Context(), act("c1", "t2", ActionClick))
	h.queued(1)
	if err := e.Cancel("c1"); err != nil {
		t.Fatal(err)
	}
	wantCode(t, result(t, ch), errcode.Canceled)
	wantCode(t, op.Err(), errcode.Canceled)
	if e.Covered(nav("c1", "t1", "https://a.test")) || !e.Covered(read("c1", "t1", "https://a.test")) {
		t.Fatal("cancel revokes navigation grants only")
	}
	if e.Paused("c1") {
		t.Fatal("cancel does not pause")
	}
	ev.waitFor(t, EventCancel)
	if len(h.mem.Kind(audit.KindCancel)) != 1 {
		t.Fatal("cancel must be audited")
	}
}

func TestRemoveTab(t *testing.T) {
	h := newHarness(t, Config{}).std()
	ev, stop := listenAll(h.e)
	defer stop()
	e := h.e
	if err := h.approveAsk(nav("c1", "t1", "https://a.test")); err != nil {
		t.Fatal(err)
	}
	op, err := e.Begin(context.Background(), "c1", "t1", "act")
	if err != nil {
		t.Fatal(err)
	}
	defer op.End()
	ch := ask(e, op.Context(), act("c1", "t1", ActionClick))
	h.focused("t1")
	e.RemoveTab("t1")
	wantCode(t, result(t, ch), errcode.TabClosed)
	wantCode(t, op.Err(), errcode.TabClosed)
	if e.Snapshot().Conversations[0].Grants != nil {
		t.Fatal("navigation grant of a closed tab must go")
	}
	// Reusing the id later must not inherit anything.
	e.PutTab(TabInfo{ID: "t1", Conversation: "c1"})
	if e.Covered(nav("c1", "t1", "https://a.test")) {
		t.Fatal("a new tab must not inherit a grant")
	}
	if x := ev.waitFor(t, EventTabRemoved); x.Tab != "t1" {
		t.Fatalf("tab removed event %+v", x)
	}
	if got := e.Snapshot().Selection; got != (Selection{"c1", "t2"}) {
		t.Fatalf("selection after closing the selected tab: %+v", got)
	}
}

func TestRemoveConversation(t *testing.T) {
	h := newHarness(t, Config{Profile: ProfileTrusted}).std()
	e := h.e
	if err := h.approveAsk(read("c1", "t1", "https://a.test")); err != nil {
		t.Fatal(err)
	}
	op, err := e.Begin(context.Background(), "c1", "t2", "act")
	if err != nil {
		t.Fatal(err)
	}
	defer op.End()
	ch := ask(e, op.Context(), disclose("c1", "t2", "{}"))
	h.queued(1)
	e.RemoveConversation("c1")
	wantCode(t, result(t, ch), errcode.Canceled)
	wantCode(t, op.Err(), errcode.Canceled)
	st := e.Snapshot()
	if len(st.Conversations) != 1 || st.Conversations[0].ID != "c2" {
		t.Fatalf("conversations %+v", st.Conversations)
	}
	if len(st.OperatorTabs) != 2 {
		t.Fatalf("c1's tabs must become operator tabs: %+v", st.OperatorTabs)
	}
	if st.Selection.Conversation != "c2" {
		t.Fatalf("selection %+v", st.Selection)
	}
	e.AddConversation("c1", "one again")
	if e.Covered(read("c1", "t1", "https://a.test")) {
		t.Fatal("grants must be dropped")
	}
	wantCode(t, e.Ask(context.Background(), read("c1", "t1", "https://a.test")), errcode.WrongConversation)
}

func TestRecheckFailureGrantsNothing(t *testing.T) {
	h := newHarness(t, Config{}).std()
	req := nav("c1", "t1", "https://a.test")
	req.Recheck = func() error { return errors.New("url moved") }
	ce := wantCodeErr(t, h.approveAsk(req), errcode.PageChanged)
	if ce.Next != errcode.NextObserveBeforeRetry {
		t.Fatalf("next %q", ce.Next)
	}
	if h.e.Covered(req) {
		t.Fatal("failed recheck must not grant")
	}
	req.Recheck = func() error {
		return &errcode.Error{Code: errcode.StaleObservation, Next: errcode.NextObserve, Dispatched: true}
	}
	ce = wantCodeErr(t, h.approveAsk(req), errcode.StaleObservation)
	if ce.Next != errcode.NextObserve {
		t.Fatalf("recheck's next must be kept: %q", ce.Next)
	}
	if h.e.Covered(req) {
		t.Fatal("failed recheck must not grant")
	}
	calls := 0
	req.Recheck = func() error { calls++; return nil }
	if err := h.approveAsk(req); err != nil || calls != 1 || !h.e.Covered(req) {
		t.Fatalf("passing recheck: err %v calls %d", err, calls)
	}
}

func TestRevocationDuringRecheckWins(t *testing.T) {
	h := newHarness(t, Config{}).std()
	req := nav("c1", "t1", "https://a.test")
	req.Recheck = func() error { return h.e.TakeOver("c1") }
	wantCode(t, h.approveAsk(req), errcode.Paused)
	if err := h.e.Resume("c1"); err != nil {
		t.Fatal(err)
	}
	if h.e.Covered(nav("c1", "t1", "https://a.test")) {
		t.Fatal("no grant may survive a take-over during recheck")
	}
	req.Recheck = func() error { h.e.RemoveTab("t1"); return nil }
	wantCode(t, h.approveAsk(req), errcode.TabClosed)
}

func TestRevocationRacesApproval(t *testing.T) {
	h := newHarness(t, Config{ReviewDelay: time.Millisecond}).std()
	e := h.e
	for i := 0; i < 200; i++ {
		var tookOver sync.WaitGroup
		var takeOverDone atomic.Bool
		var sawTakeOver atomic.Bool
		req := nav("c1", "t1", "https://a.test")
		req.Recheck = func() error {
			sawTakeOver.Store(takeOverDone.Load())
			return nil
		}
		ch := ask(e, context.Background(), req)
		r := h.focused("t1")
		time.Sleep(time.Until(r.ShownAt.Add(2 * time.Millisecond)))
		tookOver.Add(2)
		var decideErr error
		go func() { defer tookOver.Done(); decideErr = e.Decide(r.ID, true) }()
		go func() {
			defer tookOver.Done()
			if err := e.TakeOver("c1"); err != nil {
				t.Error(err)
			}
			takeOverDone.Store(true)
		}()
		tookOver.Wait()
		err := result(t, ch)
		if err == nil && sawTakeOver.Load() {
			t.Fatalf("iteration %d: ask returned nil after the take-over completed", i)
		}
		if decideErr != nil && !errors.Is(decideErr, ErrNoSuchReview) {
			t.Fatalf("iteration %d: decide %v", i, decideErr)
		}
		if errors.Is(decideErr, ErrNoSuchReview) {
			wantCode(t, err, errcode.Paused)
		}
		if e.Covered(req) || len(e.Snapshot().Conversations[0].Grants) != 0 {
			t.Fatalf("iteration %d: a grant survived the take-over", i)
		}
		if err := e.Resume("c1"); err != nil {
			t.Fatal(err)
		}
	}
}

func TestFirstDecisionWins(t *testing.T) {
	h := newHarness(t, Config{}).std()
	ch := ask(h.e, context.Background(), nav("c1", "t1", "https://a.test"))
	r := h.focused("t1")
	time.Sleep(time.Until(r.ShownAt.Add(h.cfg.ReviewDelay + 5*time.Millisecond)))
	const n = 16
	errs := make(chan error, n)
	var start sync.WaitGroup
	start.Add(1)
	for i := 0; i < n; i++ {
		go func(approve bool) { start.Wait(); errs <- h.e.Decide(r.ID, approve) }(i%2 == 0)
	}
	start.Done()
	wins := 0
	for i := 0; i < n; i++ {
		err := <-errs
		switch {
		case err == nil:
			wins++
		case !errors.Is(err, ErrNoSuchReview):
			t.Fatalf("loser got %v", err)
		}
	}
	if wins != 1 {
		t.Fatalf("%d decisions won", wins)
	}
	askErr := result(t, ch)
	if recs := h.mem.Kind(audit.KindDecision); len(recs) != 1 ||
		(recs[0].Decision == "approved") != (askErr == nil) {
		t.Fatalf("one decision, matching the ask: %+v / %v", recs, askErr)
	}
}

func TestAuditFailureFailsApprovalClosed(t *testing.T) {
	h := newHarness(t, Config{}).std()
	ch := ask(h.e, context.Background(), nav("c1", "t1", "https://a.test"))
	r := h.focused("t1")
	h.mem.FailWith(errors.New("disk full"))
	h.decide(r, true)
	wantCode(t, result(t, ch), errcode.BrowserOperationFailed)
	if h.e.Covered(nav("c1", "t1", "https://a.test")) {
		t.Fatal("an unaudited approval must not grant")
	}
	st := h.e.Snapshot()
	if last := st.Activity[len(st.Activity)-1]; !last.Warn {
		t.Fatalf("operator must see the audit failure: %+v", st.Activity)
	}
}

func TestAuditHoldsNoSecrets(t *testing.T) {
	h := newHarness(t, Config{}).std()
	fill := act("c1", "t1", ActionFill)
	fill.Action.Text = "hunter2-typed-secret"
	if err := h.approveAsk(fill); err != nil {
		t.Fatal(err)
	}
	d := disclose("c1", "t1", `{"token":"result-secret-xyz"}`)
	ch := ask(h.e, context.Background(), d)
	r := h.focused("t1")
	if r.Disclosure == nil || r.Disclosure.Result != d.Disclosure.Result {
		t.Fatal("the operator must see the complete result")
	}
	h.decide(r, false)
	wantCode(t, result(t, ch), errcode.ResultWithheld)
	var sawSize bool
	for _, rec := range h.mem.Records() {
		for _, s := range []string{rec.Note, rec.Input, rec.Origin, rec.Tool, rec.Action, rec.SHA256} {
			if s == fill.Action.Text || s == d.Disclosure.Result {
				t.Fatalf("secret in audit record %+v", rec)
			}
		}
		if rec.Kind == audit.KindDecision && rec.Action == "fill" {
			sawSize = rec.Size == int64(len(fill.Action.Text)) && rec.SHA256 == digest(fill.Action.Text)
		}
	}
	if !sawSize {
		t.Fatal("fill decision must carry size and digest")
	}
	for _, a := range h.e.Snapshot().Activity {
		if a.Text == fill.Action.Text {
			t.Fatal("secret in activity")
		}
	}
}

func TestAskContextCancelled(t *testing.T) {
	h := newHarness(t, Config{}).std()
	ctx, cancel := context.WithCancel(context.Background())
	ch := ask(h.e, ctx, nav("c1", "t1", "https://a.test"))
	h.focused("t1")
	cancel()
	wantCode(t, result(t, ch), errcode.Canceled)
	if len(h.e.Snapshot().Queue) != 0 {
		t.Fatal("cancelled ask must leave the queue")
	}
}

func TestOpEndResolvesItsReviews(t *testing.T) {
	h := newHarness(t, Config{}).std()
	op, err := h.e.Begin(context.Background(), "c1", "t1", "act")
	if err != nil {
		t.Fatal(err)
	}
	ch := ask(h.e, context.Background(), act("c1", "t1", ActionClick))
	h.focused("t1")
	op.End()
	wantCode(t, result(t, ch), errcode.Canceled)
	if op.Err() != nil {
		t.Fatalf("an ended op is not a failure: %v", op.Err())
	}
}

func TestCoveredPendingReviewsApproveWithTheGrant(t *testing.T) {
	h := newHarness(t, Config{Profile: ProfileThread}).std()
	// The operator holds the screen (a prompt is open): reviews wait in
	// the queue rather than come up by themselves.
	h.e.HoldAutoShow(true)
	// t2 is not visible: its review waits while t1's thread review is approved.
	chHidden := ask(h.e, context.Background(), nav("c1", "t2", "https://b.test"))
	h.queued(1)
	ch := ask(h.e, context.Background(), nav("c1", "t1", "https://a.test"))
	h.decide(h.focused("t1"), true)
	if err := result(t, ch); err != nil {
		t.Fatal(err)
	}
	if err := result(t, chHidden); err != nil {
		t.Fatalf("the thread grant covers the queued review: %v", err)
	}
	var byEngine bool
	for _, r := range h.mem.Kind(audit.KindDecision) {
		byEngine = byEngine || (r.Decision == "approved" && r.By == "engine")
	}
	if !byEngine {
		t.Fatal("engine approval must be audited as such")
	}
}

func TestTabChangingOwnerLosesEverything(t *testing.T) {
	h := newHarness(t, Config{}).std()
	if err := h.approveAsk(nav("c1", "t1", "https://a.test")); err != nil {
		t.Fatal(err)
	}
	op, err := h.e.Begin(context.Background(), "c1", "t1", "act")
	if err != nil {
		t.Fatal(err)
	}
	defer op.End()
	h.e.PutTab(TabInfo{ID: "t1", Conversation: "c2"})
	wantCode(t, op.Err(), errcode.WrongConversation)
	if h.e.Covered(nav("c1", "t1", "https://a.test")) || h.e.Covered(nav("c2", "t1", "https://a.test")) {
		t.Fatal("a grant must not follow the tab to its new owner")
	}
}

func TestOpErrFromCallerContext(t *testing.T) {
	h := newHarness(t, Config{}).std()
	ctx, cancel := context.WithCancel(context.Background())
	op, err := h.e.Begin(ctx, "c1", "t1", "observe")
	if err != nil {
		t.Fatal(err)
	}
	defer op.End()
	if op.Err() != nil {
		t.Fatal("a running op has no error")
	}
	ch := ask(h.e, op.Context(), read("c1", "t1", "https://a.test"))
	h.focused("t1")
	cancel()
	wantCode(t, result(t, ch), errcode.Canceled)
	wantCode(t, op.Err(), errcode.Canceled)
}

// Review ids stay unique in an audit log that several runs append to: two
// engines (two runs of the console) never hand out the same id, and the
// engine's records carry the conversation's display name.
func TestReviewIDsUniqueAcrossRuns(t *testing.T) {
	seen := map[string]bool{}
	for run := 0; run < 2; run++ {
		mem := &audittest.Memory{}
		h := newHarness(t, Config{Audit: mem}).std()
		h.e.AddConversation("c1", "default·codex·c1")
		ch := ask(h.e, context.Background(), nav("c1", "t1", "https://a.test"))
		r := h.focused("t1")
		if seen[r.ID] {
			t.Fatalf("run %d reused review id %s", run, r.ID)
		}
		seen[r.ID] = true
		h.decide(r, false)
		wantCode(t, result(t, ch), errcode.UserDenied)
		for _, rec := range mem.Records() {
			if rec.Conversation == "c1" && rec.Client != "default·codex·c1" {
				t.Errorf("run %d: %s record names the client %q", run, rec.Kind, rec.Client)
			}
		}
	}
}

// An activity line keeps the conversation's name after it has ended, so the
// log reads "cursor · Cursor: conversation ended", not an id.
func TestActivityKeepsTheNameOfEndedConversations(t *testing.T) {
	h := newHarness(t, Config{}).std()
	h.e.AddConversation("c9", "cursor · Cursor")
	h.e.RemoveConversation("c9")
	st := h.e.Snapshot()
	found := false
	for _, a := range st.Activity {
		if a.Conversation == "c9" {
			found = true
			if a.Name != "cursor · Cursor" {
				t.Errorf("activity %q names %q", a.Text, a.Name)
			}
		}
	}
	if !found {
		t.Fatal("no activity line for the ended conversation")
	}
}

// The state names the operators on SSH screens, one entry per screen, so
// the console's quit question can say who it disconnects.
func TestStateCountsOperatorScreens(t *testing.T) {
	h := newHarness(t, Config{}).std()
	ana, bob := Operator{Name: "ana", Fingerprint: "SHA256:a"}, Operator{Name: "bob", Fingerprint: "SHA256:b"}
	h.e.OperatorJoined(ana)
	h.e.OperatorJoined(bob)
	h.e.OperatorJoined(ana)
	h.e.OperatorLeft(ana, "left")
	if got := h.e.Snapshot().Operators; !slices.Equal(got, []string{"ana", "bob"}) {
		t.Fatalf("operators %v, want [ana bob]", got)
	}
	h.e.OperatorLeft(ana, "left")
	h.e.OperatorLeft(bob, "signed out")
	if got := h.e.Snapshot().Operators; len(got) != 0 {
		t.Fatalf("operators %v after all left", got)
	}
}
