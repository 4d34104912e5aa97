package browser

import (
	"context"
	"time"

	"github.com/go-rod/rod/lib/proto"

	"github.com/tabwarden/tabwarden/consent"
	"github.com/tabwarden/tabwarden/consent/errcode"
)

// NewTab opens an about:blank tab owned by conv. background keeps the
// operator's current tab in front. Errors: missing_session, paused,
// tab_limit, browser_unavailable, browser_operation_failed.
func (b *Browser) NewTab(ctx context.Context, conv consent.ConversationID, background bool) (consent.TabID, error) {
	if err := b.alive(); err != nil {
		return "", err
	}
	if conv == "" {
		return "", errcode.Errorf(errcode.MissingSession, errcode.NextNone, "no conversation")
	}
	if b.gate.Paused(conv) {
		return "", errPaused()
	}
	r := &b.reg
	r.mu.Lock()
	if r.liveOwned(conv) >= b.opts.TabLimit {
		r.mu.Unlock()
		return "", errcode.Errorf(errcode.TabLimit, errcode.NextListTabs, "this conversation already has %d tabs open; close one first", b.opts.TabLimit)
	}
	r.creating++
	r.pending[conv]++
	r.mu.Unlock()

	cctx, cancel := b.call(ctx)
	defer cancel()
	res, err := proto.TargetCreateTarget{URL: "about:blank", Background: background}.Call(b.rod().Context(cctx))

	r.mu.Lock()
	r.creating--
	if r.pending[conv]--; r.pending[conv] <= 0 {
		delete(r.pending, conv)
	}
	var t *tab
	if err == nil {
		t = r.byTarget[res.TargetID] // closed already by someone else?
		if t == nil {
			info, ok := r.unclaimed[res.TargetID]
			delete(r.unclaimed, res.TargetID)
			if !ok {
				info = proto.TargetTargetInfo{TargetID: res.TargetID, Type: proto.TargetTargetInfoTypePage, URL: "about:blank"}
			}
			t = r.add(info, conv, "")
		}
	}
	swept := r.sweep()
	var ti consent.TabInfo
	if t != nil {
		ti = t.info()
	}
	r.mu.Unlock()
	for _, s := range swept {
		b.gate.PutTab(s)
	}
	if err != nil {
		return "", b.opFailed("open a tab", err)
	}
	b.gate.PutTab(ti)
	// The attach (three calls) gets a budget of its own: creating the
	// target may have used most of cctx's, which bounds one call.
	actx, acancel := b.call(ctx)
	defer acancel()
	if _, err := b.attach(actx, t); err != nil {
		// The caller never learns this tab's id: close it rather than leave
		// a blank tab counting against the conversation's tab_limit.
		b.closeTarget(t)
		return "", b.opFailed("attach to the new tab", err)
	}
	return t.id, nil
}

// closeTarget closes t's target and marks it closed at once, whoever owns
// it; the callers have checked that they may.
func (b *Browser) closeTarget(t *tab) {
	b.reg.mu.Lock()
	target := t.target
	b.reg.mu.Unlock()
	ctx, cancel := b.call(b.ctx)
	defer cancel()
	if _, err := (proto.TargetCloseTarget{TargetID: target}).Call(b.rod().Context(ctx)); err != nil {
		b.log.Debug("close target", "target", string(target), "err", err)
	}
	b.confirmClosed(target)
	b.onTargetDestroyed(target)
}

// Closing a target can be lost: Target.closeTarget answers success, yet a
// page whose navigation just failed (a denied open: the error page is
// committing in another renderer) stays open. confirmClosed checks in the
// background that the target is gone and closes it again until it is.
const (
	closeRetries = 10
	closeRecheck = 300 * time.Millisecond
)

func (b *Browser) confirmClosed(target proto.TargetTargetID) {
	b.spawn(func() {
		for range closeRetries {
			select {
			case <-time.After(closeRecheck):
			case <-b.ctx.Done():
				return
			}
			ctx, cancel := b.call(b.ctx)
			_, err := proto.TargetGetTargetInfo{TargetID: target}.Call(b.rod().Context(ctx))
			if err == nil {
				_, _ = proto.TargetCloseTarget{TargetID: target}.Call(b.rod().Context(ctx))
				cancel()
				continue
			}
			cancel()
			return // gone (or the browser is; a relaunch starts afresh)
		}
		b.log.Warn("a closed tab is still open in Chromium", "target", string(target))
	})
}

// session returns the tab's flat CDP session, attaching on first use.
func (b *Browser) session(ctx context.Context, t *tab) (proto.TargetSessionID, error) {
	b.reg.mu.Lock()
	sid, target := t.session, t.target
	b.reg.mu.Unlock()
	if sid != "" {
		return sid, nil
	}
	res, err := proto.TargetAttachToTarget{TargetID: target, Flatten: true}.Call(b.rod().Context(ctx))
	if err != nil {
		return "", err
	}
	b.reg.mu.Lock()
	defer b.reg.mu.Unlock()
	if t.session != "" {
		// Lost a race with another attach; keep the first session and let
		// the extra one go.
		extra := res.SessionID
		b.spawn(func() {
			c, cancel := b.call(b.ctx)
			defer cancel()
			_ = proto.TargetDetachFromTarget{SessionID: extra}.Call(b.rod().Context(c))
		})
		return t.session, nil
	}
	t.session = res.SessionID
	b.reg.bySess[res.SessionID] = t
	return t.session, nil
}

// attach returns the tab's session with the Page domain and lifecycle
// events on, which Navigate needs to wait for a load.
func (b *Browser) attach(ctx context.Context, t *tab) (proto.TargetSessionID, error) {
	sid, err := b.session(ctx, t)
	if err != nil {
		return sid, err
	}
	// The session may be another caller's (page input, a take-over's stop
	// of loading) that turned nothing on: whether lifecycle events flow is
	// the tab's own state, not "a session exists" (a popup whose session
	// came first that way stayed "loading" for good).
	b.reg.mu.Lock()
	claimed := !t.following
	t.following = true
	b.reg.mu.Unlock()
	if !claimed {
		return sid, nil
	}
	c := client{b: b, sid: sid, ctx: ctx}
	err = followFrames(c)
	if err == nil {
		err = proto.PageSetLifecycleEventsEnabled{Enabled: true}.Call(c)
	}
	if err != nil {
		b.reg.mu.Lock()
		t.following = false // the next attach tries again
		b.reg.mu.Unlock()
		return "", err
	}
	return sid, nil
}

// CloseTab closes a tab owned by conv.
func (b *Browser) CloseTab(ctx context.Context, conv consent.ConversationID, id consent.TabID) error {
	t, err := b.reg.lookup(conv, id)
	if err != nil {
		return err
	}
	cctx, cancel := b.call(ctx)
	defer cancel()
	if _, err := (proto.TargetCloseTarget{TargetID: t.target}).Call(b.rod().Context(cctx)); err != nil {
		return b.opFailed("close the tab", err)
	}
	b.confirmClosed(t.target)
	// Chromium's targetDestroyed event comes later; until it does the tab
	// must already be closed for every caller, so a use right after close
	// is tab_closed rather than a dead CDP session. The event's second
	// pass finds nothing left to do.
	b.onTargetDestroyed(t.target)
	return nil
}

// closeEnded closes the tabs of a conversation whose grace is over
// (consent.EventCloseTabs). Only tabs a conversation owned are closed: the
// engine names tabs by id, and an operator's own tab is never one of them.
func (b *Browser) closeEnded(ids []consent.TabID) {
	var ts []*tab
	b.reg.mu.Lock()
	for _, id := range ids {
		if t := b.reg.byID[id]; t != nil && !t.closed && t.conv != "" {
			ts = append(ts, t)
		}
	}
	b.reg.mu.Unlock()
	if len(ts) == 0 {
		return
	}
	b.spawn(func() {
		for _, t := range ts {
			b.closeTarget(t)
		}
	})
}
