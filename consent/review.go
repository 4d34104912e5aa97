package consent

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/tabwarden/tabwarden/consent/audit"
	"github.com/tabwarden/tabwarden/consent/errcode"
)

// review is a pending gate. The exported Review part is what the operator
// sees; the rest fences and times it.
type review struct {
	Review
	req        Request
	origin     string // canonical
	conv       *conv
	tab        *tab
	op         *Op // op running on the tab when asked; nil for hook-held requests
	convEpoch  uint64
	tabEpoch   uint64
	focused    bool
	queuedAt   time.Time
	timer      *time.Timer
	timerGen   uint64
	resolved   bool
	out        outcome
	done       chan struct{}
	realShown  time.Time // ShownAt on the real clock (timers use it)
	realCreate time.Time
}

// outcome is how a review resolved. err is the *errcode.Error Ask returns when the
// review was not approved.
type outcome struct {
	approved bool
	err      *errcode.Error
	decision string // audit Decision
	by       string // operator | engine
	note     string // audit Note: why the engine withdrew the review
	op       Operator
	// scoped: the operator pressed `s`; the grant is given once the step
	// passes its re-check (grantLocked). grant names the scoped grant the
	// review was approved under, for the caller's result.
	scoped bool
	grant  string
}

func (r *review) copyOut() Review {
	c := r.Review
	if r.Action != nil {
		a := *r.Action
		c.Action = &a
	}
	if r.Plan != nil {
		c.Plan = append([]Action(nil), r.Plan...)
	}
	if r.Upload != nil {
		u := *r.Upload
		c.Upload = &u
	}
	if r.ToolCall != nil {
		t := *r.ToolCall
		c.ToolCall = &t
	}
	if r.Disclosure != nil {
		d := *r.Disclosure
		c.Disclosure = &d
	}
	if r.Scope != nil {
		s := *r.Scope
		c.Scope = &s
	}
	return c
}

// checkOwnerLocked is the ownership check shared by Begin, Ask and the
// post-approval re-check.
func (e *Engine) checkOwnerLocked(id ConversationID, tabID TabID) (*conv, *tab, *errcode.Error) {
	if e.closed {
		return nil, nil, errcode.Errorf(errcode.Canceled, errcode.NextNone, "console is shutting down")
	}
	if id == "" {
		return nil, nil, errcode.Errorf(errcode.MissingSession, errcode.NextNone, "the call carries no conversation identity")
	}
	c, ok := e.convs[id]
	if !ok {
		return nil, nil, errcode.Errorf(errcode.MissingSession, errcode.NextNone, "unknown conversation")
	}
	if c.paused {
		return nil, nil, errcode.Errorf(errcode.Paused, errcode.NextUserResume, "the operator took over this conversation")
	}
	if tabID == "" {
		return c, nil, nil
	}
	t, ok := e.tabs[tabID]
	if !ok {
		return nil, nil, errcode.Errorf(errcode.TabClosed, errcode.NextListTabs, "tab %s is closed or unknown", tabID)
	}
	if t.info.Conversation != id {
		return nil, nil, errcode.Errorf(errcode.WrongConversation, errcode.NextListTabs, "tab %s belongs to another conversation or to the operator", tabID)
	}
	return c, t, nil
}

// Covered reports whether a grant already covers req (no review would be shown).
func (e *Engine) Covered(req Request) bool {
	origin, err := canonOrigin(req.Origin)
	if err != nil {
		return false
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	c, _, cerr := e.checkOwnerLocked(req.Conversation, req.Tab)
	if cerr != nil || req.Tab == "" {
		return false
	}
	return c.grants.covers(req, origin) || e.scopedCoverLocked(c, req, origin) != nil
}

// shownKind is the panel the effective profile shows for req given the
// conversation's grants.
func (e *Engine) shownKind(base ReviewKind, req Request, g *grants) ReviewKind {
	switch e.eff {
	case ProfileThread:
		if !g.thread && (base == KindNavigation || base == KindRead || (base == KindAction && isScroll(req))) {
			return KindThread
		}
	case ProfileTrusted:
		if !g.session && base != KindDisclosure {
			return KindSession
		}
	}
	return base
}

// Ask is AskGrant for a caller that does not name the grant in its result.
func (e *Engine) Ask(ctx context.Context, req Request) error {
	_, err := e.AskGrant(ctx, req)
	return err
}

// AskGrant gates req. It returns at once when a grant covers req (after
// req.Recheck when a scoped grant covers it, whose id Pass.Grant names);
// otherwise
// it queues a review and blocks until the operator decides, the review times
// out, the op (if any runs on req.Tab) ends or is revoked, or ctx is done.
// After an approval it re-checks the engine's own state (conversation still
// owns the tab, not paused, not cancelled) and then req.Recheck, and only
// then records the grant and returns nil. Errors are *errcode.Error with
// dispatched:false: user_denied, timeout, needs_attention, paused, canceled,
// tab_closed, wrong_conversation, or the recheck's code.
func (e *Engine) AskGrant(ctx context.Context, req Request) (Pass, error) {
	base, kerr := baseKind(req)
	if kerr != nil {
		return Pass{}, kerr
	}
	origin, oerr := canonOrigin(req.Origin)
	if oerr != nil {
		return Pass{}, oerr
	}
	if req.Tab == "" {
		return Pass{}, errcode.Errorf(errcode.BrowserOperationFailed, errcode.NextNone, "a gated request must name its tab")
	}
	if ctx.Err() != nil {
		return Pass{}, errcode.Errorf(errcode.Canceled, errcode.NextNone, "the request was canceled")
	}
	e.mu.Lock()
	c, t, cerr := e.checkOwnerLocked(req.Conversation, req.Tab)
	if cerr != nil {
		e.mu.Unlock()
		return Pass{}, cerr
	}
	if c.grants.covers(req, origin) {
		e.mu.Unlock()
		return Pass{}, nil
	}
	if g := e.scopedCoverLocked(c, req, origin); g != nil {
		e.mu.Unlock()
		return e.passScoped(ctx, req, origin, g, c, t)
	}
	r := e.newReviewLocked(req, base, origin, c, t)
	var opDone <-chan struct{}
	if r.op != nil {
		opDone = r.op.ctx.Done()
	}
	e.mu.Unlock()

	for waiting := true; waiting; {
		select {
		case <-r.done:
			waiting = false
		case <-ctx.Done():
			// The caller is gone (design.md §4): the review is withdrawn, with
			// the reason the caller's context was ended for.
			why := errcode.Errorf(errcode.Canceled, errcode.NextNone, "the request was canceled while waiting for review%s", causeSuffix(ctx))
			e.mu.Lock()
			e.resolveLocked(r, outcome{err: why, decision: "canceled", by: "engine", note: "withdrawn: " + why.Message})
			e.commitLocked()
			e.mu.Unlock()
			waiting = false
		case <-opDone:
			e.mu.Lock()
			if r.op == nil {
				// The op ended normally and left this navigation to the
				// tab (Op.End): it waits for the operator as before.
				e.mu.Unlock()
				opDone = nil
				continue
			}
			why := r.op.whyLocked()
			out := outcome{err: why, decision: decisionFor(why.Code), by: "engine"}
			if r.op.reason == nil {
				// Not the engine's doing: the op's caller is gone.
				out.note = "withdrawn: " + why.Message
			}
			e.resolveLocked(r, out)
			e.commitLocked()
			e.mu.Unlock()
			waiting = false
		}
	}
	<-r.done
	if !r.out.approved {
		return Pass{}, r.out.err
	}

	e.mu.Lock()
	err := e.recheckLocked(ctx, r)
	e.mu.Unlock()
	if err != nil {
		return Pass{}, err
	}
	if req.Recheck != nil {
		if err := req.Recheck(); err != nil {
			return Pass{}, recheckErr(err)
		}
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	// Again under the lock: a revocation during Recheck must win.
	if err := e.recheckLocked(ctx, r); err != nil {
		return Pass{}, err
	}
	pass := e.grantLocked(r)
	e.commitLocked()
	return pass, nil
}

// recheckErr is a failed req.Recheck as the agent sees it: nothing ran.
func recheckErr(err error) *errcode.Error {
	var ce *errcode.Error
	if errors.As(err, &ce) {
		cp := *ce
		cp.Dispatched, cp.MayHaveChangedState = false, false
		return &cp
	}
	return &errcode.Error{Code: errcode.PageChanged, Message: "the page changed after approval: " + err.Error(), Next: errcode.NextObserveBeforeRetry}
}

// passScoped lets req through under scoped grant g: the same re-check as
// after an approval (req.Recheck, then the engine's own state and the
// grant, under the lock, so a revocation during Recheck wins and the step
// asks instead), then the use is audited before the step may run.
func (e *Engine) passScoped(ctx context.Context, req Request, origin string, g *scopedGrant, c *conv, t *tab) (Pass, error) {
	if req.Recheck != nil {
		if err := req.Recheck(); err != nil {
			return Pass{}, recheckErr(err)
		}
	}
	e.mu.Lock()
	c2, t2, cerr := e.checkOwnerLocked(req.Conversation, req.Tab)
	if cerr != nil {
		e.mu.Unlock()
		return Pass{}, cerr
	}
	if ctx.Err() != nil {
		e.mu.Unlock()
		return Pass{}, errcode.Errorf(errcode.Canceled, errcode.NextNone, "the request was canceled")
	}
	live := e.scopedCoverLocked(c2, req, origin)
	if live != g || c2 != c || t2 != t {
		// Revoked or expired while the page was re-checked: ask.
		e.mu.Unlock()
		return e.AskGrant(ctx, req)
	}
	err := e.useScopedLocked(g, req, origin, "")
	e.commitLocked()
	e.mu.Unlock()
	if err != nil {
		return Pass{}, err
	}
	return Pass{Grant: g.ID}, nil
}

func (e *Engine) newReviewLocked(req Request, base ReviewKind, origin string, c *conv, t *tab) *review {
	kind := e.shownKind(base, req, &c.grants)
	title, label, consequence := panelText(kind, req)
	if req.Consequence != "" && kind != KindThread && kind != KindSession {
		// Thread and session panels grant more than this one request, so
		// they always state their own consequence.
		consequence = req.Consequence
	}
	e.seq++
	now := e.now()
	r := &review{
		Review: Review{
			ID:               "r" + e.run + "-" + strconv.FormatUint(e.seq, 10),
			Kind:             kind,
			Gate:             req.Gate,
			Title:            title,
			ApproveLabel:     label,
			Conversation:     c.id,
			ConversationName: c.name,
			Tab:              t.info.ID,
			Origin:           origin,
			OriginUnicode:    unicodeOrigin(origin),
			Consequence:      consequence,
			Action:           req.Action,
			Plan:             req.Plan,
			Upload:           req.Upload,
			ToolCall:         req.ToolCall,
			Disclosure:       req.Disclosure,
			Scope:            e.offerLocked(kind, req, origin),
			Created:          now,
		},
		req:        req,
		origin:     origin,
		conv:       c,
		tab:        t,
		op:         e.tabOps[t.info.ID],
		convEpoch:  c.epoch,
		tabEpoch:   t.epoch,
		queuedAt:   time.Now(),
		realCreate: time.Now(),
		done:       make(chan struct{}),
	}
	// Keep the caller's detail values out of reach of later mutation.
	r.Review = r.copyOut()
	if r.op != nil && r.op.ended {
		r.op = nil
	}
	if r.op != nil {
		// The time a review waits for the operator, queued or on screen,
		// never counts against its op's budget (design.md §3).
		r.op.stopClockLocked()
	}
	e.queue = append(e.queue, r)
	e.autoShow = true
	e.addActivityLocked(c.id, fmt.Sprintf("review asked: %s %s (tab %s)", describeKind(kind, req), origin, t.info.ID), false)
	e.armLocked(r)
	e.commitLocked()
	return r
}

func describeKind(kind ReviewKind, req Request) string {
	switch kind {
	case KindAction:
		if req.Action != nil {
			return "action " + string(req.Action.Type)
		}
	case KindPlan:
		return fmt.Sprintf("plan of %d actions", len(req.Plan))
	case KindToolCall:
		if req.ToolCall != nil {
			return "site tool " + req.ToolCall.ToolName
		}
	case KindDisclosure:
		if req.Disclosure != nil {
			return "share result of " + req.Disclosure.ToolName
		}
	case KindThread:
		return "thread control"
	case KindSession:
		return "session control"
	}
	return string(kind)
}

// recheckLocked is the engine half of the post-approval re-check.
func (e *Engine) recheckLocked(ctx context.Context, r *review) *errcode.Error {
	c, t, err := e.checkOwnerLocked(r.Conversation, r.Tab)
	if err != nil {
		return err
	}
	if c != r.conv || c.epoch != r.convEpoch {
		return errcode.Errorf(errcode.Canceled, errcode.NextNone, "the conversation's consent was revoked during review")
	}
	if t != r.tab || t.epoch != r.tabEpoch {
		return errcode.Errorf(errcode.TabClosed, errcode.NextListTabs, "tab %s changed during review", r.Tab)
	}
	// An op that ended normally after the approval (the act that set off
	// a navigation returned meanwhile) leaves the step to the tab; only an
	// op that was cancelled, timed out or lost its caller withdraws it.
	if r.op != nil {
		if why := r.op.errLocked(); why != nil {
			return why
		}
	}
	if ctx.Err() != nil {
		return errcode.Errorf(errcode.Canceled, errcode.NextNone, "the request was canceled")
	}
	return nil
}

// grantLocked records what an approved review allows, then approves the
// pending reviews of the conversation the new grant now covers. It
// returns how the step passed: under a scoped grant (`s`, or one given
// while this review waited) Pass names it.
func (e *Engine) grantLocked(r *review) Pass {
	if r.out.scoped {
		sg := e.giveScopedLocked(r, r.out.op)
		if sg == nil {
			return Pass{}
		}
		sg.Uses++ // this review's own step
		for _, o := range append([]*review(nil), e.queue...) {
			if o.conv == r.conv && e.scopedCoverLocked(o.conv, o.req, o.origin) == sg {
				sg.Uses++
				e.resolveLocked(o, outcome{approved: true, decision: "approved", by: "grant", grant: sg.ID})
			}
		}
		return Pass{Grant: sg.ID}
	}
	if r.out.grant != "" {
		return Pass{Grant: r.out.grant}
	}
	g := &r.conv.grants
	switch r.Kind {
	case KindNavigation:
		g.nav[navKey{r.Tab, r.origin}] = struct{}{}
	case KindRead:
		g.read[r.origin] = struct{}{}
	case KindThread:
		g.thread = true
	case KindSession:
		g.session = true
	default:
		return Pass{} // one use: nothing to remember
	}
	for _, o := range append([]*review(nil), e.queue...) {
		if o.conv == r.conv && g.covers(o.req, o.origin) {
			e.resolveLocked(o, outcome{approved: true, decision: "approved", by: "engine"})
		}
	}
	return Pass{}
}

// Decide resolves the focused review. approve=false denies. It returns
// ErrTooEarly (and reports it in the activity log and to listeners) when the
// review has been on screen for less than the review delay, ErrNoSuchReview
// when it is unknown or resolved, ErrNotShown when it is not on screen.
func (e *Engine) Decide(reviewID string, approve bool) error {
	return e.DecideAs(Decision{Review: reviewID, Approve: approve, By: LocalOperator})
}

// DecideAs resolves the focused review on behalf of d.By, with the
// key-ahead guard counted per screen (d.SeenAt). The first decision wins:
// a later one gets ErrNoSuchReview. Errors are Decide's.
func (e *Engine) DecideAs(d Decision) error {
	id, approve, op := d.Review, d.Approve, d.By.orLocal()
	e.mu.Lock()
	defer e.mu.Unlock()
	var r *review
	for _, q := range e.queue {
		if q.ID == id {
			r = q
			break
		}
	}
	if r == nil {
		return ErrNoSuchReview
	}
	if !r.focused {
		return ErrNotShown
	}
	seen := r.realShown
	if d.SeenAt.After(seen) {
		seen = d.SeenAt
	}
	if time.Since(seen) < e.cfg.ReviewDelay {
		// Every screen reads the log: name who pressed what, as the
		// decision lines do.
		key := "d"
		switch {
		case approve && d.Scoped:
			key = "s"
		case approve:
			key = "a"
		}
		e.addActivityLocked(r.Conversation, fmt.Sprintf("%s (%s pressed %s)", ErrTooEarly.Error(), op.Name, key), true)
		e.auditLocked(withOperator(e.recordLocked(audit.KindKeyIgnored, r), op))
		cp := r.copyOut()
		e.emitLocked(Event{Kind: EventKeyIgnored, Conversation: r.Conversation, Tab: r.Tab, Review: &cp})
		e.commitLocked()
		return ErrTooEarly
	}
	if d.Scoped && approve {
		if r.Scope == nil || r.Scope.Refused {
			why := "this panel has no scoped grant"
			if r.Scope != nil {
				why = r.Scope.Text
			}
			err := &NotGrantableError{Reason: why}
			if r.Kind != KindAction && r.Kind != KindPlan && r.Kind != KindUpload && r.Kind != KindToolCall {
				// A navigation's a is for the tab, a read's for the
				// conversation: not "once".
				err.Approve = r.ApproveLabel
			}
			e.addActivityLocked(r.Conversation, err.Error(), true)
			e.commitLocked()
			return err
		}
	}
	out := outcome{approved: true, decision: "approved", by: "operator", op: op, scoped: d.Scoped}
	if !approve {
		out = outcome{err: errcode.Errorf(errcode.UserDenied, errcode.NextNone, "the operator denied %s", describeKind(r.Kind, r.req)), decision: "denied", by: "operator", op: op}
		if r.Kind == KindDisclosure {
			out.err = errcode.Errorf(errcode.ResultWithheld, errcode.NextNone, "the operator did not share the result")
		}
	}
	e.resolveLocked(r, out)
	e.commitLocked()
	return nil
}

// resolveLocked settles r exactly once: the decision is audited before the
// waiting Ask can see it, and an approval whose record cannot be written
// fails closed.
func (e *Engine) resolveLocked(r *review, out outcome) {
	if r.resolved {
		return
	}
	if r.focused {
		e.unfocusLocked(r)
		// The screen is free: the next waiting review comes up by itself.
		e.autoShow = true
	}
	if r.op != nil {
		r.op.startClockLocked()
	}
	e.stopTimerLocked(r)
	for i, q := range e.queue {
		if q == r {
			e.queue = append(e.queue[:i:i], e.queue[i+1:]...)
			break
		}
	}
	rec := e.recordLocked(audit.KindDecision, r)
	rec.Decision = out.decision
	rec.By = out.by
	rec = withOperator(rec, out.op)
	rec.WaitMS = time.Since(r.realCreate).Milliseconds()
	rec.Note = out.note
	rec.Grant = out.grant
	if out.scoped {
		rec.Note = joinNote(rec.Note, "s: allow "+string(r.Scope.Class)+" for a while")
	}
	if out.err != nil {
		rec.Code = string(out.err.Code)
	}
	if err := e.writeAuditLocked(rec); err != nil && out.approved {
		out = outcome{err: &errcode.Error{Code: errcode.BrowserOperationFailed, Message: "the decision could not be written to the audit log: " + err.Error()}, decision: "approved", by: out.by, op: out.op}
	}
	r.resolved = true
	r.out = out
	// A disclosure's result lives only as long as its review.
	r.Disclosure = nil
	r.req.Disclosure = nil
	close(r.done)

	verb := out.decision
	switch out.decision {
	case "timeout":
		verb = "timed out"
	case "needs_attention":
		verb = "needs attention (not reviewed in time)"
	}
	if out.op.Name != "" {
		verb += " by " + out.op.Name
	}
	if out.scoped {
		verb += " (s: for a while)"
	}
	if out.grant != "" {
		verb += " under grant " + out.grant
	}
	e.addActivityLocked(r.Conversation, fmt.Sprintf("review %s: %s %s (tab %s)", verb, describeKind(r.Kind, r.req), r.origin, r.Tab), !out.approved && out.decision != "denied")
	cp := r.copyOut()
	e.emitLocked(Event{Kind: EventDecision, Conversation: r.Conversation, Tab: r.Tab, Review: &cp, Approved: out.approved})
}

// recordLocked builds an audit record for r: sizes and digests only.
func (e *Engine) recordLocked(kind audit.Kind, r *review) audit.Record {
	rec := requestRecord(kind, r.req, r.origin)
	rec.Conversation = string(r.Conversation)
	rec.Tab = string(r.Tab)
	rec.Review = r.ID
	rec.ReviewKind = string(r.Kind)
	return rec
}

func joinNote(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

func digest(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// refocusLocked puts the oldest pending review of the visible tab on
// screen and sends any other one back to the queue. When that leaves the
// screen empty just after a review was asked or one on screen was settled,
// the oldest waiting review comes on screen by itself, its tab selected
// and brought to front (design.md §4 "No review waits unseen") — unless the
// operator holds the screen: the selected conversation is taken over (the
// person works in the page) or a screen said so (HoldAutoShow: the task
// prompt is open). The operator moving away from a review on purpose
// (Select) does not bring it back.
func (e *Engine) refocusLocked() {
	var want *review
	for _, r := range e.queue {
		if e.visibleLocked(e.tabs[r.Tab]) && e.tabs[r.Tab] == r.tab {
			want = r
			break
		}
	}
	if want == nil && e.autoShow && !e.closed && !e.holdingScreenLocked() {
		for _, r := range e.queue {
			if t := e.tabs[r.Tab]; t == r.tab && t.info.Conversation == r.Conversation {
				e.setSelectionLocked(Selection{Conversation: r.Conversation, Tab: r.Tab})
				want = r
				break
			}
		}
	}
	e.autoShow = false
	if want == e.focused {
		return
	}
	if old := e.focused; old != nil {
		e.unfocusLocked(old)
		e.armLocked(old)
	}
	if want == nil || e.closed {
		return
	}
	want.focused = true
	e.focused = want
	want.ShownAt = e.now()
	want.realShown = time.Now()
	want.Deadline = want.ShownAt.Add(e.cfg.ReviewTimeout)
	e.armLocked(want)
	e.auditLocked(e.recordLocked(audit.KindReviewShown, want))
	cp := want.copyOut()
	e.emitLocked(Event{Kind: EventReviewShown, Conversation: want.Conversation, Tab: want.Tab, Review: &cp})
}

func (e *Engine) unfocusLocked(r *review) {
	r.focused = false
	r.ShownAt = time.Time{}
	r.Deadline = time.Time{}
	r.queuedAt = time.Now()
	if e.focused == r {
		e.focused = nil
	}
}

// holdingScreenLocked: the operator is busy on screen, so no review takes
// it by itself.
func (e *Engine) holdingScreenLocked() bool {
	if e.screenHolds > 0 {
		return true
	}
	c := e.convs[e.sel.Conversation]
	return c != nil && c.paused
}

// HoldAutoShow tells the engine a screen is busy with input of its own
// (hold true) or done (false): while any screen holds, waiting reviews
// stay in the queue rather than take the screen by themselves. Calls
// pair up.
func (e *Engine) HoldAutoShow(hold bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if hold {
		e.screenHolds++
	} else if e.screenHolds > 0 {
		e.screenHolds--
		e.autoShow = true
	}
	e.commitLocked()
}

func (e *Engine) stopTimerLocked(r *review) {
	r.timerGen++
	if r.timer != nil {
		r.timer.Stop()
		r.timer = nil
	}
}

// armLocked sets r's timer for its current state: a review on screen times
// out ReviewTimeout after it was shown; a queued one needs attention
// ReviewTimeout after it was queued — the full time, like one on screen,
// whether or not an op waits on it (the op's budget is paused meanwhile).
func (e *Engine) armLocked(r *review) {
	if r == nil || r.resolved {
		return
	}
	e.stopTimerLocked(r)
	var d time.Duration
	var out outcome
	switch {
	case r.focused:
		d = time.Until(r.realShown.Add(e.cfg.ReviewTimeout))
		code := errcode.Timeout
		if r.Kind == KindDisclosure {
			code = errcode.DisclosureTimeout
		}
		out = outcome{err: errcode.Errorf(code, errcode.NextNone, "the review was not decided within %s", e.cfg.ReviewTimeout), decision: "timeout", by: "engine"}
	default:
		d = time.Until(r.queuedAt.Add(e.cfg.ReviewTimeout))
		out = outcome{err: needsAttention(), decision: "needs_attention", by: "engine"}
	}
	gen := r.timerGen
	r.timer = time.AfterFunc(d, func() {
		e.mu.Lock()
		defer e.mu.Unlock()
		if e.closed || r.resolved || r.timerGen != gen {
			return
		}
		e.resolveLocked(r, out)
		e.commitLocked()
	})
}

// causeSuffix is ": <cause>" for a context ended with a cause of its own
// (the MCP server says why a caller is gone), "" otherwise.
func causeSuffix(ctx context.Context) string {
	c := context.Cause(ctx)
	if c == nil || errors.Is(c, context.Canceled) || errors.Is(c, context.DeadlineExceeded) || errors.Is(c, errEnded) {
		return ""
	}
	return ": " + c.Error()
}

// queueDeadlineLocked is when queued review r gives up unless shown (the
// timers armLocked and the op's budget clock set), on the engine's clock.
func (e *Engine) queueDeadlineLocked(r *review) time.Time {
	if r.focused || r.resolved {
		return time.Time{}
	}
	left := time.Until(r.queuedAt.Add(e.cfg.ReviewTimeout))
	return e.now().Add(max(left, 0))
}

func needsAttention() *errcode.Error {
	return errcode.Errorf(errcode.NeedsAttention, errcode.NextReview, "the review waits for the operator in a tab that is not on screen")
}

// decisionFor names an engine-side resolution in the audit vocabulary.
func decisionFor(c errcode.Code) string {
	switch c {
	case errcode.Timeout, errcode.Paused, errcode.NeedsAttention, errcode.TabClosed:
		return string(c)
	}
	return "canceled"
}
