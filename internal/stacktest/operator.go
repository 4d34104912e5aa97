package stacktest

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/tabwarden/tabwarden/consent"
)

// Operator plays the person at the keyboard: it waits for a review to
// come on screen and answers it with one decision, honouring the
// key-ahead guard. It waits on the engine's change signal, never on a
// clock.
type Operator struct {
	t   testing.TB
	ctx context.Context
	eng *consent.Engine
	// delay is the engine's key-ahead guard, waited out before a key.
	delay time.Duration
	// selectQueued makes the operator bring a queued review on screen
	// (select its tab, as g would) when none is: for conversations the
	// test does not select itself, such as an MCP client's.
	selectQueued bool
	// beforeKey runs once the guard is waited out, just before each key.
	beforeKey func()

	mu      sync.Mutex
	decided []consent.Review
}

// Operator returns the person at this stack's keyboard for t; ctx bounds
// every wait (a review that never comes fails the test when it ends).
func (s *Stack) Operator(t testing.TB, ctx context.Context) *Operator {
	return &Operator{t: t, ctx: ctx, eng: s.Engine, delay: s.reviewDelay}
}

// SelectingQueued returns the operator who brings a queued review on
// screen when none is, as the person pressing g would.
func (o *Operator) SelectingQueued() *Operator {
	return &Operator{t: o.t, ctx: o.ctx, eng: o.eng, delay: o.delay, selectQueued: true, beforeKey: o.beforeKey}
}

// BeforeKey returns the operator who runs fn just before each key, once
// the key-ahead guard is waited out: for a test that arms a fault at the
// moment of the decision.
func (o *Operator) BeforeKey(fn func()) *Operator {
	return &Operator{t: o.t, ctx: o.ctx, eng: o.eng, delay: o.delay, selectQueued: o.selectQueued, beforeKey: fn}
}

// Await returns the focused review once it is of kind for origin. Any
// other review on screen meanwhile is a failure: the test says which
// review each step must show.
func (o *Operator) Await(kind consent.ReviewKind, origin string) consent.Review {
	o.t.Helper()
	changes, stop := o.eng.Changes()
	defer stop()
	for {
		st := o.eng.Snapshot()
		if r := st.Focused; r != nil {
			if r.Kind != kind || r.Origin != origin {
				o.t.Fatalf("review on screen is %s for %s (%q), want %s for %s", r.Kind, r.Origin, r.ApproveLabel, kind, origin)
			}
			return *r
		}
		if o.selectQueued && len(st.Queue) > 0 {
			r := st.Queue[0]
			if st.Selection.Conversation != r.Conversation || st.Selection.Tab != r.Tab {
				o.eng.Select(r.Conversation, r.Tab)
			}
		}
		select {
		case <-changes:
		case <-o.ctx.Done():
			o.t.Fatalf("no %s review for %s came on screen; queue %+v", kind, origin, st.Queue)
		}
	}
}

// AwaitQueued returns a pending review of kind for origin, on screen or
// waiting in the queue for its tab to be selected.
func (o *Operator) AwaitQueued(kind consent.ReviewKind, origin string) consent.Review {
	o.t.Helper()
	changes, stop := o.eng.Changes()
	defer stop()
	for {
		st := o.eng.Snapshot()
		for _, r := range st.Queue {
			if r.Kind == kind && r.Origin == origin {
				return r
			}
		}
		select {
		case <-changes:
		case <-o.ctx.Done():
			o.t.Fatalf("no %s review for %s was queued; queue %+v", kind, origin, st.Queue)
		}
	}
}

// Decide answers r. A decision sooner than the review delay is ignored by
// the engine (ErrTooEarly), so the operator waits it out and presses again.
func (o *Operator) Decide(r consent.Review, approve bool) {
	o.t.Helper()
	for {
		if wait := time.Until(r.ShownAt.Add(o.delay)); wait > 0 {
			select {
			case <-time.After(wait):
			case <-o.ctx.Done():
				o.t.Fatalf("decide %s: %v", r.ID, o.ctx.Err())
			}
		}
		if o.beforeKey != nil {
			o.beforeKey()
		}
		err := o.eng.Decide(r.ID, approve)
		if errors.Is(err, consent.ErrTooEarly) {
			r.ShownAt = time.Now()
			continue
		}
		if err != nil {
			o.t.Fatalf("decide %s review %s: %v", r.Kind, r.ID, err)
		}
		o.mu.Lock()
		o.decided = append(o.decided, r)
		o.mu.Unlock()
		return
	}
}

// Approve waits for the review of kind for origin and approves it.
func (o *Operator) Approve(kind consent.ReviewKind, origin string) consent.Review {
	o.t.Helper()
	r := o.Await(kind, origin)
	o.Decide(r, true)
	return r
}

// Deny waits for the review of kind for origin and denies it.
func (o *Operator) Deny(kind consent.ReviewKind, origin string) consent.Review {
	o.t.Helper()
	r := o.Await(kind, origin)
	o.Decide(r, false)
	return r
}

// Decided is every review this operator answered, in order.
func (o *Operator) Decided() []consent.Review {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]consent.Review(nil), o.decided...)
}
