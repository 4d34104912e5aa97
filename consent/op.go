package consent

import (
	"context"
	"errors"
	"time"

	"github.com/tabwarden/tabwarden/consent/errcode"
)

// Op is one running operation on a tab.
type Op struct {
	// Every field but the immutable ones is guarded by the engine mutex.
	e        *Engine
	conv     ConversationID
	tab      TabID
	name     string
	ctx      context.Context
	cancelFn context.CancelCauseFunc

	ended  bool
	halted bool           // budget clock stopped for good (ended or cancelled)
	reason *errcode.Error // why the engine ended the op's context

	// Budget: OpDeadline minus the time the op ran while none of its
	// reviews was on screen.
	shown     int // reviews of this op on screen (0 or 1 in practice)
	remaining time.Duration
	since     time.Time
	timer     *time.Timer
	gen       uint64
}

// errEnded is the context cause of an op its caller ended; it is not a
// failure, so Err reports nil for it.
var errEnded = errors.New("operation ended")

// Begin starts an operation of conversation id on tab tabID (tabID may be
// empty for ops that create a tab or touch none). It fails with
// missing_session (empty id), paused (conversation taken over), tab_closed
// (unknown tab), wrong_conversation (tab owned by another conversation or by
// the operator) or busy (another op runs on the tab). The op's context is
// done when its deadline passes (not counting time a shown review waits for
// the operator), when the operator cancels it or takes over, or when ctx is
// done.
func (e *Engine) Begin(ctx context.Context, id ConversationID, tabID TabID, name string) (*Op, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if _, _, err := e.checkOwnerLocked(id, tabID); err != nil {
		return nil, err
	}
	if tabID != "" {
		if cur := e.tabOps[tabID]; cur != nil {
			return nil, errcode.Errorf(errcode.Busy, errcode.NextNone, "tab %s is running %s", tabID, cur.name)
		}
	}
	o := &Op{e: e, conv: id, tab: tabID, name: name}
	o.ctx, o.cancelFn = context.WithCancelCause(ctx)
	o.remaining = e.cfg.OpDeadline
	o.runClockLocked()
	e.ops[o] = struct{}{}
	if tabID != "" {
		e.tabOps[tabID] = o
	}
	e.commitLocked()
	return o, nil
}

// Context is done when the op must stop (deadline, cancel, take-over, tab close).
func (o *Op) Context() context.Context { return o.ctx }

// Err returns the *errcode.Error explaining why Context is done, or nil.
func (o *Op) Err() error {
	o.e.mu.Lock()
	defer o.e.mu.Unlock()
	if err := o.errLocked(); err != nil {
		return err
	}
	return nil
}

// errLocked explains a done context; nil while it runs or after End.
func (o *Op) errLocked() *errcode.Error {
	if o.reason != nil {
		return o.reason
	}
	if o.ctx.Err() == nil || errors.Is(context.Cause(o.ctx), errEnded) {
		return nil
	}
	if errors.Is(o.ctx.Err(), context.DeadlineExceeded) {
		return errcode.Errorf(errcode.Timeout, errcode.NextNone, "the caller's deadline passed")
	}
	return errcode.Errorf(errcode.Canceled, errcode.NextNone, "the caller canceled the operation%s", causeSuffix(o.ctx))
}

// whyLocked is errLocked for paths that know the op is over.
func (o *Op) whyLocked() *errcode.Error {
	if err := o.errLocked(); err != nil {
		return err
	}
	return errcode.Errorf(errcode.Canceled, errcode.NextNone, "the operation ended")
}

// BindTab attaches tab tabID, created by this op (browser_open), so busy,
// take-over and review-wait accounting apply to it.
func (o *Op) BindTab(tabID TabID) {
	e := o.e
	e.mu.Lock()
	defer e.mu.Unlock()
	if o.ended || tabID == "" {
		return
	}
	if cur := e.tabOps[tabID]; cur != nil && cur != o {
		// Another op holds the tab: leave it; this op stays tab-less.
		return
	}
	if o.tab != "" && e.tabOps[o.tab] == o {
		delete(e.tabOps, o.tab)
	}
	o.tab = tabID
	e.tabOps[tabID] = o
	e.commitLocked()
}

// End finishes the op and frees the tab.
func (o *Op) End() {
	o.e.mu.Lock()
	defer o.e.mu.Unlock()
	o.endLocked()
}

func (o *Op) endLocked() {
	e := o.e
	if o.ended {
		return
	}
	o.ended = true
	o.haltLocked()
	// Reviews still asked on behalf of the op have no one to serve. When
	// the op's caller is gone, End may come before the Ask that waits on
	// the review sees it: the review is withdrawn with the caller's reason
	// either way.
	out := outcome{err: errcode.Errorf(errcode.Canceled, errcode.NextNone, "the operation ended"), decision: "canceled", by: "engine"}
	why := o.errLocked()
	if why != nil && o.reason == nil {
		out = outcome{err: why, decision: decisionFor(why.Code), by: "engine", note: "withdrawn: " + why.Message}
	}
	for _, r := range append([]*review(nil), e.queue...) {
		if r.op != o {
			continue
		}
		// A navigation the op set off (a clicked link whose request reached
		// the hook before the act returned) is the tab's, not the op's: when
		// the op ends normally it stays for the operator, like one asked
		// after the op ended. A caller that is gone still withdraws it.
		if why == nil && r.Kind == KindNavigation {
			o.startClockLocked() // the review no longer holds the op's clock
			r.op = nil
			continue
		}
		e.resolveLocked(r, out)
	}
	o.cancelFn(errEnded)
	delete(e.ops, o)
	if o.tab != "" && e.tabOps[o.tab] == o {
		delete(e.tabOps, o.tab)
	}
	e.commitLocked()
}

// cancelLocked ends the op's context with why (the first reason wins).
func (o *Op) cancelLocked(why *errcode.Error) {
	o.haltLocked()
	if o.ctx.Err() == nil && o.reason == nil {
		o.reason = why
	}
	o.cancelFn(why)
}

func (o *Op) haltLocked() {
	o.halted = true
	o.gen++
	if o.timer != nil {
		o.timer.Stop()
		o.timer = nil
	}
}

// stopClockLocked pauses the budget while a review of the op waits for
// the operator (queued or on screen).
func (o *Op) stopClockLocked() {
	o.shown++
	if o.shown != 1 || o.halted {
		return
	}
	o.remaining -= time.Since(o.since)
	o.gen++
	if o.timer != nil {
		o.timer.Stop()
		o.timer = nil
	}
}

// startClockLocked resumes the budget when the op's review is settled.
func (o *Op) startClockLocked() {
	if o.shown > 0 {
		o.shown--
	}
	if o.shown == 0 && !o.halted {
		o.runClockLocked()
	}
}

func (o *Op) runClockLocked() {
	o.since = time.Now()
	o.gen++
	gen := o.gen
	o.timer = time.AfterFunc(o.remaining, func() { o.expire(gen) })
}

// expire runs when the budget is spent. A review of the op still queued
// behind an invisible tab means the operator never saw it: needs_attention.
func (o *Op) expire(gen uint64) {
	e := o.e
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed || o.halted || o.gen != gen {
		return
	}
	why := errcode.Errorf(errcode.Timeout, errcode.NextNone, "operation %s ran out of its %s budget", o.name, e.cfg.OpDeadline)
	var waiting []*review
	for _, r := range e.queue {
		if r.op == o && !r.focused {
			waiting = append(waiting, r)
			why = needsAttention()
		}
	}
	// Cancel before resolving so the op is already done when its Ask returns.
	o.cancelLocked(why)
	for _, r := range waiting {
		e.resolveLocked(r, outcome{err: why, decision: "needs_attention", by: "engine"})
	}
	e.commitLocked()
}
