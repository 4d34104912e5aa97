package consent

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/tabwarden/tabwarden/consent/audit"
	"github.com/tabwarden/tabwarden/consent/errcode"
)

// A review whose caller is gone is withdrawn at once, and the audit says
// why (design.md §4): the cause the transport gave the caller's context.
func TestGoneCallerWithdrawsWithReason(t *testing.T) {
	gone := errors.New("the caller is gone: the HTTP connection that carried the call closed")
	for _, viaOp := range []bool{false, true} {
		name := map[bool]string{false: "ask context", true: "op context"}[viaOp]
		t.Run(name, func(t *testing.T) {
			h := newHarness(t, Config{}).std()
			ctx, cancel := context.WithCancelCause(context.Background())
			askCtx := ctx
			if viaOp {
				// A request held by the hook asks with its own context; the
				// op on the tab carries the caller's.
				op, err := h.e.Begin(ctx, "c1", "t1", "open")
				if err != nil {
					t.Fatal(err)
				}
				defer op.End()
				askCtx = context.Background()
			}
			ch := ask(h.e, askCtx, nav("c1", "t1", "https://a.test"))
			r := h.focused("t1")
			cancel(gone)
			ce := wantCodeErr(t, result(t, ch), errcode.Canceled)
			if !strings.Contains(ce.Message, gone.Error()) {
				t.Errorf("error %q does not say why", ce.Message)
			}
			st := h.e.Snapshot()
			if st.Focused != nil || len(st.Queue) != 0 {
				t.Fatalf("the withdrawn review is still pending: %+v", st.Queue)
			}
			if err := h.e.Decide(r.ID, true); !errors.Is(err, ErrNoSuchReview) {
				t.Fatalf("approving the withdrawn review: %v, want ErrNoSuchReview", err)
			}
			recs := h.mem.Kind(audit.KindDecision)
			if len(recs) != 1 || recs[0].Decision != "canceled" || recs[0].Review != r.ID ||
				!strings.HasPrefix(recs[0].Note, "withdrawn: ") || !strings.Contains(recs[0].Note, gone.Error()) {
				t.Fatalf("decision records %+v, want one canceled, noted withdrawn with the reason", recs)
			}
		})
	}
}

// The op's owner may End it (its call returned on the cancelled context)
// before the Ask waiting on the review wakes: the review is withdrawn with
// the caller's reason all the same.
func TestOpEndAfterCallerGoneWithdrawsWithReason(t *testing.T) {
	gone := errors.New("the caller is gone: its HTTP request ended")
	h := newHarness(t, Config{}).std()
	ctx, cancel := context.WithCancelCause(context.Background())
	op, err := h.e.Begin(ctx, "c1", "t1", "open")
	if err != nil {
		t.Fatal(err)
	}
	// The hook's Ask never wakes on its own: it waits on a context that
	// does not end, like a request held while the tab's op runs.
	ch := ask(h.e, context.Background(), nav("c1", "t1", "https://a.test"))
	r := h.focused("t1")
	h.e.mu.Lock() // End runs before the waiting Ask can see the cancellation
	cancel(gone)
	op.endLocked()
	h.e.mu.Unlock()
	wantCode(t, result(t, ch), errcode.Canceled)
	recs := h.mem.Kind(audit.KindDecision)
	if len(recs) != 1 || recs[0].Review != r.ID || recs[0].Decision != "canceled" || !strings.Contains(recs[0].Note, gone.Error()) {
		t.Fatalf("decision records %+v, want one canceled, noted withdrawn with the reason", recs)
	}
}

// A browser_open whose caller dies closes the tab it made; the tab's close
// can reach the engine before the waiting Ask sees the cancellation. The
// review is withdrawn for the caller's reason all the same, not recorded
// as tab_closed (the killed-caller end-to-end test once saw that).
func TestTabClosedAfterCallerGoneWithdrawsWithReason(t *testing.T) {
	gone := errors.New("the caller is gone: the HTTP connection that carried the call closed")
	h := newHarness(t, Config{}).std()
	ctx, cancel := context.WithCancelCause(context.Background())
	op, err := h.e.Begin(ctx, "c1", "t1", "open")
	if err != nil {
		t.Fatal(err)
	}
	defer op.End()
	ch := ask(h.e, context.Background(), nav("c1", "t1", "https://a.test"))
	r := h.focused("t1")
	h.e.mu.Lock() // the tab closes before the waiting Ask can see the cancellation
	cancel(gone)
	h.e.mu.Unlock()
	h.e.RemoveTab("t1")
	wantCode(t, result(t, ch), errcode.Canceled)
	recs := h.mem.Kind(audit.KindDecision)
	if len(recs) != 1 || recs[0].Review != r.ID || recs[0].Decision != "canceled" || !strings.Contains(recs[0].Note, gone.Error()) {
		t.Fatalf("decision records %+v, want one canceled, noted withdrawn with the reason", recs)
	}
}

// A tab the operator or the site closes under a live caller is tab_closed.
func TestTabClosedUnderLiveCallerIsTabClosed(t *testing.T) {
	h := newHarness(t, Config{}).std()
	op, err := h.e.Begin(context.Background(), "c1", "t1", "open")
	if err != nil {
		t.Fatal(err)
	}
	defer op.End()
	ch := ask(h.e, context.Background(), nav("c1", "t1", "https://a.test"))
	h.focused("t1")
	h.e.RemoveTab("t1")
	wantCode(t, result(t, ch), errcode.TabClosed)
	if recs := h.mem.Kind(audit.KindDecision); len(recs) != 1 || recs[0].Decision != "tab_closed" || recs[0].Note != "" {
		t.Fatalf("decision records %+v, want one tab_closed", recs)
	}
}

// Reviews the engine itself ends carry no "withdrawn" note: only a caller
// that is gone withdraws.
func TestEngineResolutionsAreNotWithdrawals(t *testing.T) {
	h := newHarness(t, Config{ReviewTimeout: tTimeout}).std()
	ch := ask(h.e, context.Background(), nav("c1", "t1", "https://a.test"))
	wantCode(t, result(t, ch), errcode.Timeout)
	for _, r := range h.mem.Kind(audit.KindDecision) {
		if r.Note != "" {
			t.Fatalf("a timed-out review is noted %q", r.Note)
		}
	}
}

// A review waiting in the queue carries its remaining time: ReviewTimeout
// from when it was queued, with or without an op; none on screen.
func TestQueuedReviewDeadline(t *testing.T) {
	h := newHarness(t, Config{OpDeadline: longOp, ReviewTimeout: longReview}).std()
	// The operator holds the screen (a prompt is open): reviews wait in
	// the queue rather than come up by themselves.
	h.e.HoldAutoShow(true)
	op, err := h.e.Begin(context.Background(), "c1", "t2", "navigate")
	if err != nil {
		t.Fatal(err)
	}
	defer op.End()
	before := time.Now()
	chOp := ask(h.e, op.Context(), nav("c1", "t2", "https://a.test")) // t2 is not visible
	chHeld := ask(h.e, context.Background(), nav("c2", "t3", "https://b.test"))
	st := h.queued(2)
	after := time.Now()
	for _, r := range st.Queue {
		if r.QueueDeadline.IsZero() {
			t.Fatalf("queued review %s has no deadline", r.ID)
		}
		// The review timeout started between before and after.
		if r.QueueDeadline.Before(before.Add(longReview-time.Second)) || r.QueueDeadline.After(after.Add(longReview)) {
			t.Errorf("queued review %s (tab %s) deadline %v, want about %v from now", r.ID, r.Tab, r.QueueDeadline.Sub(after), longReview)
		}
	}
	// On screen, the panel's Deadline applies instead.
	h.e.Select("c1", "t2")
	f := h.focused("t2")
	for _, r := range h.e.Snapshot().Queue {
		if r.ID == f.ID && !r.QueueDeadline.IsZero() {
			t.Errorf("the review on screen has a queue deadline %v", r.QueueDeadline)
		}
		if r.ID != f.ID && r.QueueDeadline.IsZero() {
			t.Errorf("the still-queued review lost its deadline")
		}
	}
	h.decide(f, false)
	wantCode(t, result(t, chOp), errcode.UserDenied)
	h.e.RemoveConversation("c2")
	wantCode(t, result(t, chHeld), errcode.Canceled)
}

// A navigation an act set off (the clicked link's request reached the hook
// before the act returned) belongs to the tab: when the act's op ends
// normally the review stays for the operator, and approving it lets the
// navigation on. (Seen live: TestE2ELinkClickToAnotherOriginIsHeld.)
func TestNavigationOutlivesTheActThatSetItOff(t *testing.T) {
	h := newHarness(t, Config{}).std()
	op, err := h.e.Begin(context.Background(), "c1", "t1", "act")
	if err != nil {
		t.Fatal(err)
	}
	ch := ask(h.e, context.Background(), nav("c1", "t1", "https://b.test"))
	r := h.focused("t1")
	op.End()
	st := h.e.Snapshot()
	if st.Focused == nil || st.Focused.ID != r.ID {
		t.Fatalf("the navigation review went with the act: focused %+v, queue %+v", st.Focused, st.Queue)
	}
	h.decide(r, true)
	if err := result(t, ch); err != nil {
		t.Fatalf("the held navigation got %v, want approval", err)
	}
}

// The same navigation approved while the act still ran: the act's op may end
// normally between the operator's key and the Ask's re-check (on a busy
// machine it often does). The approval stands; only a caller that is gone
// or a deadline withdraws it. (Seen under load: TestGrantLadderFiftySteps,
// a clicked link to a second origin approved and then put on about:blank.)
func TestNavigationApprovedBeforeTheActEndedStands(t *testing.T) {
	h := newHarness(t, Config{}).std()
	op, err := h.e.Begin(context.Background(), "c1", "t1", "act")
	if err != nil {
		t.Fatal(err)
	}
	req := nav("c1", "t1", "https://b.test")
	// Recheck runs between the engine's two re-checks of its own state:
	// the act ends there, after the approval and before the grant.
	req.Recheck = func() error { op.End(); return nil }
	ch := ask(h.e, context.Background(), req)
	r := h.focused("t1")
	h.decide(r, true)
	if err := result(t, ch); err != nil {
		t.Fatalf("the approved navigation got %v after its act ended normally, want approval", err)
	}
}

// An act whose caller is gone between the approval and the re-check takes
// the navigation it set off with it.
func TestNavigationApprovedThenCallerGoneIsWithdrawn(t *testing.T) {
	h := newHarness(t, Config{}).std()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	op, err := h.e.Begin(ctx, "c1", "t1", "act")
	if err != nil {
		t.Fatal(err)
	}
	req := nav("c1", "t1", "https://b.test")
	req.Recheck = func() error { cancel(); op.End(); return nil }
	ch := ask(h.e, context.Background(), req)
	h.decide(h.focused("t1"), true)
	wantCode(t, result(t, ch), errcode.Canceled)
}

// The agent's own hand-off pauses like a take-over but is attributed to
// the agent: no operator pressed anything (the walk read "take-over by
// local" at demo step 4).
func TestHandOffIsTheAgents(t *testing.T) {
	h := newHarness(t, Config{}).std()
	if err := h.e.HandOff("c1"); err != nil {
		t.Fatal(err)
	}
	if !h.e.Paused("c1") {
		t.Fatal("the hand-off did not pause the conversation")
	}
	recs := h.mem.Kind(audit.KindTakeOver)
	if len(recs) != 1 || recs[0].By != "agent" || recs[0].Operator != "" {
		t.Fatalf("take-over records %+v, want one by the agent with no operator", recs)
	}
	st := h.e.Snapshot()
	for _, c := range st.Conversations {
		if c.ID == "c1" && c.PausedBy != "" {
			t.Errorf("paused by %q, want no operator", c.PausedBy)
		}
	}
	found := false
	for _, a := range st.Activity {
		found = found || strings.HasPrefix(a.Text, "hand-off by the agent:")
		if strings.Contains(a.Text, "take-over by") {
			t.Errorf("the hand-off is logged as an operator's take-over: %q", a.Text)
		}
	}
	if !found {
		t.Errorf("no hand-off line in the activity log: %+v", st.Activity)
	}
	// Resuming it names no one who took over (the walk read "taken over
	// by ): demo agent").
	if err := h.e.Resume("c1"); err != nil {
		t.Fatal(err)
	}
	for _, a := range h.e.Snapshot().Activity {
		if strings.Contains(a.Text, "taken over by") {
			t.Errorf("the resume of a hand-off names a taker: %q", a.Text)
		}
	}
	if recs := h.mem.Kind(audit.KindResume); len(recs) != 1 || recs[0].Note != "" {
		t.Errorf("resume records %+v, want one with no taker note", recs)
	}
}
