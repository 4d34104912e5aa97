package browser

import (
	"context"
	"time"

	"github.com/go-rod/rod/lib/proto"

	"github.com/tabwarden/tabwarden/browser/cdpedge"
	"github.com/tabwarden/tabwarden/consent"
	"github.com/tabwarden/tabwarden/consent/errcode"
)

// agentNav starts an agent-driven navigation of tab id: the tab must be
// conv's, the conversation not taken over; the tab's denial is reset and
// the tab marked as navigating for the agent until agentNavDone.
func (b *Browser) agentNav(conv consent.ConversationID, id consent.TabID) (*tab, proto.TargetSessionID, error) {
	t, err := b.reg.lookup(conv, id)
	if err != nil {
		return nil, "", err
	}
	b.reg.mu.Lock()
	t.agentNavs++
	t.denial = nil
	b.reg.mu.Unlock()
	// Checked after marking, so a take-over now either fails this call or
	// finds the mark in the hook.
	if b.gate.Paused(conv) {
		b.agentNavDone(t)
		return nil, "", errPaused()
	}
	cctx, cancel := b.call(b.ctx)
	sid, err := b.attach(cctx, t)
	cancel()
	if err != nil {
		b.agentNavDone(t)
		return nil, "", b.opFailed("attach to the tab", err)
	}
	return t, sid, nil
}

func (b *Browser) agentNavDone(t *tab) {
	b.reg.mu.Lock()
	t.agentNavs--
	b.reg.mu.Unlock()
}

// History moves tab id back, forward or reloads it. It is gated exactly
// like Navigate: the main-frame request goes through the hook, which asks
// navigation consent for an origin the tab holds no grant for (after a
// take-over, none). Chromium runs with the back/forward cache disabled
// (see launch flags), so going back always issues a request the hook
// judges; a page restored from that cache would never reach it.
// Errors: invalid_action (unknown action, no entry that way), paused,
// tab_closed, wrong_conversation, the consent or policy refusal,
// browser_unavailable, browser_operation_failed.
func (b *Browser) History(ctx context.Context, conv consent.ConversationID, id consent.TabID, action string) error {
	if err := b.alive(); err != nil {
		return err
	}
	if action != "back" && action != "forward" && action != "reload" {
		return errcode.Errorf(errcode.InvalidAction, errcode.NextNone, "action must be back, forward or reload")
	}
	t, sid, err := b.agentNav(conv, id)
	if err != nil {
		return err
	}
	defer b.agentNavDone(t)

	cctx, cancel := b.call(ctx)
	defer cancel()
	c := client{b: b, sid: sid, ctx: cctx}
	b.reg.mu.Lock()
	before := t.loader
	b.reg.mu.Unlock()
	if action == "reload" {
		err = proto.PageReload{}.Call(c)
	} else {
		var h *proto.PageGetNavigationHistoryResult
		h, err = proto.PageGetNavigationHistory{}.Call(c)
		if err != nil {
			return b.opFailed("read the tab's history", err)
		}
		i := h.CurrentIndex - 1
		if action == "forward" {
			i = h.CurrentIndex + 1
		}
		if i < 0 || i >= len(h.Entries) {
			return errcode.Errorf(errcode.InvalidAction, errcode.NextNone, "there is no page to go %s to", action)
		}
		err = proto.PageNavigateToHistoryEntry{EntryID: h.Entries[i].ID}.Call(c)
	}
	if err != nil {
		return b.opFailed(action, err)
	}
	if err := b.waitNewDocument(ctx, t, before); err != nil {
		return err
	}
	return b.navEnded(t)
}

// navEnded is what ended an agent navigation of t other than a CDP error:
// the hook's refusal, or the tab closing under it; nil when neither.
func (b *Browser) navEnded(t *tab) error {
	b.reg.mu.Lock()
	defer b.reg.mu.Unlock()
	switch {
	case t.denial != nil:
		return t.denial
	case t.closed:
		return errcode.Errorf(errcode.TabClosed, errcode.NextListTabs, "tab %s was closed", t.id)
	}
	return nil
}

// waitNewDocument waits, at most cdpedge.Load, until a document other than
// before has loaded in t, or the hook refused the navigation, or the tab
// closed. History calls return before the navigation even starts, so
// unlike Navigate there is no loader id to wait for.
func (b *Browser) waitNewDocument(ctx context.Context, t *tab, before proto.NetworkLoaderID) error {
	limit := time.NewTimer(cdpedge.Load)
	defer limit.Stop()
	for {
		b.reg.mu.Lock()
		done := t.closed || t.denial != nil || (t.loader != before && t.lifecycle[proto.PageLifecycleEventNameLoad])
		ch := t.lifeCh
		b.reg.mu.Unlock()
		if done {
			return nil
		}
		select {
		case <-ch:
		case <-limit.C:
			return nil // a page that never finishes loading is still a page
		case <-ctx.Done():
			return b.opFailed("wait for the page", ctx.Err())
		case <-b.ctx.Done():
			return unavailable("the browser is closed")
		}
	}
}

// takeOver stops every load of conv's tabs: whatever the agent started is
// not to finish under the operator's hands. (Held navigation questions
// were withdrawn on the event's delivery, onConsentEvent; not here: this
// runs late on a busy machine, and after a resume a held question is the
// agent's new one.) The hook lets the operator's own navigation through
// from now on.
func (b *Browser) takeOver(conv consent.ConversationID) {
	var ts []*tab
	b.reg.mu.Lock()
	for _, t := range b.reg.byID {
		if !t.closed && t.conv == conv {
			ts = append(ts, t)
		}
	}
	b.reg.mu.Unlock()
	for _, t := range ts {
		// This runs on its own goroutine, possibly late on a busy
		// machine: once the operator has resumed, a navigation loading
		// now is the agent's new one, not one to stop.
		if !b.gate.Paused(conv) {
			return
		}
		ctx, cancel := b.call(b.ctx)
		sid, err := b.session(ctx, t)
		if err == nil {
			err = proto.PageStopLoading{}.Call(client{b: b, sid: sid, ctx: ctx})
		}
		cancel()
		if err != nil {
			b.log.Debug("take-over: stop loading", "tab", string(t.id), "err", err)
		}
	}
}
