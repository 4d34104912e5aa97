package consent

import (
	"github.com/tabwarden/tabwarden/consent/audit"
	"github.com/tabwarden/tabwarden/consent/errcode"
)

// TakeOver pauses conversation id: its running op is cancelled (paused),
// its pending reviews resolve paused, navigation and profile grants are
// revoked.
func (e *Engine) TakeOver(id ConversationID) error { return e.TakeOverAs(id, LocalOperator) }

// TakeOverAs is TakeOver by op; every screen shows who took over
// (ConversationState.PausedBy).
func (e *Engine) TakeOverAs(id ConversationID, op Operator) error {
	return e.takeOver(id, op.orLocal(), false)
}

// HandOff is the take-over a conversation's own agent asks for
// (browser_handoff): the same pause, revocations and withdrawals, but
// attributed to the agent, not to an operator who pressed nothing; any
// operator resumes it with one r.
func (e *Engine) HandOff(id ConversationID) error { return e.takeOver(id, Operator{}, true) }

func (e *Engine) takeOver(id ConversationID, op Operator, handoff bool) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	c, ok := e.convs[id]
	if !ok {
		return ErrUnknownConversation
	}
	c.paused = true
	c.pausedBy = op
	c.pauseNote = ""
	c.epoch++
	why := errcode.Errorf(errcode.Paused, errcode.NextUserResume, "the operator took over this conversation")
	by, who := "operator", "take-over by "+op.Name
	if handoff {
		why = errcode.Errorf(errcode.Paused, errcode.NextUserResume, "the agent handed the browser to the operator")
		by, who = "agent", "hand-off by the agent"
	}
	e.cancelOpsLocked(id, why)
	e.resolveConvLocked(id, outcome{err: why, decision: "paused", by: by, op: op})
	revoked := c.revokeNavigation()
	e.revokeConvScopedLocked(id, who)
	rec := audit.Record{Kind: audit.KindTakeOver, By: by}
	if !handoff {
		rec = withOperator(rec, op)
	}
	e.announceLocked(Event{Kind: EventTakeOver, Conversation: id}, rec,
		who+": "+c.name+" paused; "+revoked, true)
	return nil
}

// Resume ends a take-over. Only the operator calls it. Navigation consent is
// asked again afterwards.
func (e *Engine) Resume(id ConversationID) error { return e.ResumeAs(id, LocalOperator) }

// ResumeAs is Resume by op. A resume by another operator than the one who
// took over is allowed (the screen asks for an explicit second `r`) and
// audited as such: its record's Note names the operator who took over.
func (e *Engine) ResumeAs(id ConversationID, op Operator) error {
	op = op.orLocal()
	e.mu.Lock()
	defer e.mu.Unlock()
	c, ok := e.convs[id]
	if !ok {
		return ErrUnknownConversation
	}
	if !c.paused {
		return nil
	}
	c.paused = false
	rec := withOperator(audit.Record{Kind: audit.KindResume, By: "operator"}, op)
	line := "resumed by " + op.Name + ": " + c.name + "; navigation asks again"
	if taker := c.pausedBy; taker.Name != "" && taker != op {
		rec.Note = "taken over by " + taker.Name
		line = "resumed by " + op.Name + " (taken over by " + taker.Name + "): " + c.name + "; navigation asks again"
	}
	c.pausedBy = Operator{}
	c.pauseNote = ""
	e.announceLocked(Event{Kind: EventResume, Conversation: id}, rec, line, false)
	return nil
}

// Cancel cancels conversation id's running op(s) and pending reviews
// (canceled) and revokes the conversation's navigation grants.
func (e *Engine) Cancel(id ConversationID) error { return e.CancelAs(id, LocalOperator) }

// CancelAs is Cancel by op, attributed in the audit log and the activity
// log like a decision.
func (e *Engine) CancelAs(id ConversationID, op Operator) error {
	op = op.orLocal()
	e.mu.Lock()
	defer e.mu.Unlock()
	c, ok := e.convs[id]
	if !ok {
		return ErrUnknownConversation
	}
	c.epoch++
	why := errcode.Errorf(errcode.Canceled, errcode.NextNone, "the operator canceled the operation")
	e.cancelOpsLocked(id, why)
	e.resolveConvLocked(id, outcome{err: why, decision: "canceled", by: "operator", op: op})
	revoked := c.revokeNavigation()
	e.revokeConvScopedLocked(id, "the operator canceled (x)")
	e.announceLocked(Event{Kind: EventCancel, Conversation: id}, withOperator(audit.Record{Kind: audit.KindCancel, By: "operator"}, op),
		"canceled by "+op.Name+": "+c.name+"; "+revoked, true)
	return nil
}

// SetPauseNote sets what every screen's take-over banner says the operator
// does while conversation id stays taken over: the console's own wiring
// calls it when it knows more than the screen does (the headless demo
// signs in for the operator, so nothing is left to type). A conversation
// that is not taken over keeps no note; the next take-over or resume
// clears it. Agents never reach it.
func (e *Engine) SetPauseNote(id ConversationID, text string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	c, ok := e.convs[id]
	if !ok || !c.paused || c.pauseNote == text {
		return
	}
	c.pauseNote = text
	e.commitLocked()
}

// Paused reports whether conversation id is taken over.
func (e *Engine) Paused(id ConversationID) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	c, ok := e.convs[id]
	return ok && c.paused
}

func (e *Engine) cancelOpsLocked(id ConversationID, why *errcode.Error) {
	for op := range e.ops {
		if op.conv == id {
			op.cancelLocked(why)
		}
	}
}

func (e *Engine) resolveConvLocked(id ConversationID, out outcome) {
	for _, r := range append([]*review(nil), e.queue...) {
		if r.Conversation == id {
			e.resolveLocked(r, out)
		}
	}
}

// revokeNavigation drops c's navigation consent, as take-over and
// cancellation do (design.md §4), and says what went for the activity
// line. The thread and session grants carry navigation, so they go too:
// otherwise the next open would load with no review after the log said
// consent was revoked.
func (c *conv) revokeNavigation() string {
	revoked := "navigation consent revoked"
	switch {
	case c.grants.thread:
		revoked = "navigation consent and the thread grant revoked"
	case c.grants.session:
		revoked = "navigation consent and the session grant revoked"
	}
	c.grants.nav = map[navKey]struct{}{}
	c.grants.thread = false
	c.grants.session = false
	return revoked
}
