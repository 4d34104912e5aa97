package browser

import (
	"fmt"
	"net/url"

	"github.com/go-rod/rod/lib/proto"

	"github.com/tabwarden/tabwarden/consent"
)

// httpish reports whether a popup may keep this URL: the web, or the blank
// page a popup starts on.
func httpish(raw string) bool {
	if raw == "" || raw == "about:blank" {
		return true
	}
	u, err := url.Parse(raw)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https")
}

// onTargetInfo runs on the event loop: state only, Chromium calls go to
// spawned goroutines.
func (b *Browser) onTargetInfo(info *proto.TargetTargetInfo, created bool) {
	if info.Type != proto.TargetTargetInfoTypePage {
		return
	}
	var report []consent.TabInfo
	var closePopup, attachPopup *tab
	r := &b.reg
	r.mu.Lock()
	t := r.byTarget[info.TargetID]
	switch {
	case t != nil:
		t.url, t.title = info.URL, info.Title
		if t.popup && !httpish(info.URL) && !isErrorPage(info.URL) {
			closePopup = t
		} else {
			report = append(report, t.info())
		}
	case r.unclaimed[info.TargetID].TargetID != "":
		r.unclaimed[info.TargetID] = *info
	default:
		if op := r.byTarget[info.OpenerID]; info.OpenerID != "" && op != nil && op.conv != "" && !op.closed {
			// A popup of a task tab: same conversation, own navigation
			// scope (no grant is inherited; the hook asks afresh).
			t = r.add(*info, op.conv, op.id)
			if !httpish(info.URL) {
				closePopup = t
			} else if r.liveOwned(op.conv) > b.opts.TabLimit {
				closePopup = t
			} else {
				report = append(report, t.info())
				attachPopup = t
			}
		} else if r.creating > 0 {
			r.unclaimed[info.TargetID] = *info
		} else {
			report = append(report, r.add(*info, "", "").info())
		}
	}
	r.mu.Unlock()
	_ = created
	for _, ti := range report {
		b.gate.PutTab(ti)
	}
	if closePopup != nil {
		b.closePopup(closePopup, info.URL)
	}
	if attachPopup != nil {
		// A popup's load is followed like a NewTab's: only a registry
		// session carries the lifecycle events that end "loading". Its
		// first request waits in the hook for consent meanwhile.
		b.spawn(func() {
			ctx, cancel := b.call(b.ctx)
			defer cancel()
			if _, err := b.attach(ctx, attachPopup); err != nil {
				b.log.Debug("attach to popup", "err", err)
			}
		})
	}
}

func isErrorPage(u string) bool { return len(u) >= 13 && u[:13] == "chrome-error:" }

// closePopup closes a popup the conversation may not keep and says why in
// the activity log.
func (b *Browser) closePopup(t *tab, where string) {
	reason := "a popup to a non-HTTP(S) address"
	if httpish(where) {
		reason = fmt.Sprintf("a popup beyond the tab limit (%d)", b.opts.TabLimit)
	}
	b.gate.Note(t.conv, fmt.Sprintf("closed %s opened by %s", reason, t.opener), true)
	target := t.target
	b.spawn(func() {
		ctx, cancel := b.call(b.ctx)
		defer cancel()
		_, _ = proto.TargetCloseTarget{TargetID: target}.Call(b.rod().Context(ctx))
	})
}

func (b *Browser) onTargetDestroyed(id proto.TargetTargetID) {
	r := &b.reg
	r.mu.Lock()
	delete(r.unclaimed, id)
	t := r.byTarget[id]
	if t != nil {
		t.closed = true
		delete(r.byTarget, id)
		delete(r.bySess, t.session)
		for sid, target := range r.guarded {
			if target == id {
				delete(r.guarded, sid)
			}
		}
		for f, target := range r.frames {
			if target == id {
				delete(r.frames, f)
			}
		}
		for sid, target := range r.oopifs {
			if target == id {
				delete(r.oopifs, sid)
			}
		}
		delete(r.unfollowed, id)
		close(t.lifeCh) // wakes a Navigate waiting for this tab's load
		t.lifeCh = make(chan struct{})
	}
	var h *Handle
	if t != nil {
		h = t.handle
	}
	r.mu.Unlock()
	if h != nil {
		b.endHandles([]*Handle{h}, EndTabClosed)
	}
	if t != nil {
		b.gate.RemoveTab(t.id)
	}
}

// onFrameAttached runs on the event loop: a frame came into a tab's page
// (on the tab's own session, the upload guard's, or the session of one of
// the tab's out-of-process frames), so a document request from it is known
// to be that tab's sub-frame.
func (b *Browser) onFrameAttached(sid proto.TargetSessionID, frame proto.PageFrameID) {
	r := &b.reg
	r.mu.Lock()
	defer r.mu.Unlock()
	target := r.guarded[sid]
	if t := r.bySess[sid]; t != nil {
		target = t.target
	} else if tab := r.oopifs[sid]; tab != "" {
		target = tab
	}
	if target != "" {
		r.frames[frame] = target
	}
}

// targetIframe is an out-of-process frame's target type (rod v0.116's
// proto names no constant for it).
const targetIframe proto.TargetTargetInfoType = "iframe"

// followFrames turns on, for a tab's session or one of its out-of-process
// frames', what places every frame in the tab (design.md §8: a frame's
// document answers to the tab's grants): Page events, so frames attached
// here are reported, and auto-attach to out-of-process frames, each held
// before its document commits until it is followed too. A cross-site
// frame runs in a process of its own, and the frames its document makes
// are reported only on that process's session.
//
// No filter: Chromium 156 holds a dedicated worker waiting for a debugger
// even when the filter leaves workers out, and nobody would release it.
// Every other child is attached too, released at once and let go.
func followFrames(c client) error {
	if err := (proto.PageEnable{}).Call(c); err != nil {
		return err
	}
	return proto.TargetSetAutoAttach{AutoAttach: true, WaitForDebuggerOnStart: true, Flatten: true}.Call(c)
}

// onFrameTarget runs on the event loop when a session auto-attached a
// target. On a tab's session or one of its frames' it is a child of that
// tab: an out-of-process frame is the tab's, and so is every frame
// attached in its session. It reports whether the child is ours to
// follow (a frame) or let go (anything else) and release.
func (b *Browser) onFrameTarget(parent proto.TargetSessionID, e *proto.TargetAttachedToTarget) bool {
	r := &b.reg
	r.mu.Lock()
	defer r.mu.Unlock()
	target := r.oopifs[parent]
	if t := r.bySess[parent]; t != nil {
		target = t.target
	}
	if target == "" {
		return false // another client's session (rod's pages, site tools)
	}
	if e.TargetInfo.Type != targetIframe {
		return true
	}
	r.oopifs[e.SessionID] = target
	// An out-of-process frame's id is its target's.
	r.frames[proto.PageFrameID(e.TargetInfo.TargetID)] = target
	return true
}

// followFrame follows an out-of-process frame of a tab and lets it run;
// any other child (a worker) is let run and let go. A frame is released
// even when following failed: a frame left waiting would hang the page,
// and placeFrame refuses what it then cannot place.
func (b *Browser) followFrame(e *proto.TargetAttachedToTarget) {
	if e.TargetInfo.Type != targetIframe {
		ctx, cancel := b.call(b.ctx)
		defer cancel()
		c := client{b: b, sid: e.SessionID, ctx: ctx}
		if e.WaitingForDebugger {
			if err := (proto.RuntimeRunIfWaitingForDebugger{}).Call(c); err != nil {
				b.log.Debug("release child", "type", string(e.TargetInfo.Type), "err", err)
			}
		}
		_ = proto.TargetDetachFromTarget{SessionID: e.SessionID}.Call(b.rod().Context(ctx))
		return
	}
	ctx, cancel := b.call(b.ctx)
	err := followFrames(client{b: b, sid: e.SessionID, ctx: ctx})
	cancel()
	if err != nil {
		b.log.Debug("follow frame", "err", err)
		b.reg.mu.Lock()
		if tab := b.reg.oopifs[e.SessionID]; tab != "" {
			b.reg.unfollowed[tab] = true
		}
		b.reg.mu.Unlock()
	}
	if !e.WaitingForDebugger {
		return
	}
	ctx, cancel = b.call(b.ctx)
	defer cancel()
	if err := (proto.RuntimeRunIfWaitingForDebugger{}).Call(client{b: b, sid: e.SessionID, ctx: ctx}); err != nil {
		b.log.Debug("release frame", "err", err)
	}
}

// onLifecycle runs on the event loop.
func (b *Browser) onLifecycle(sid proto.TargetSessionID, e *proto.PageLifecycleEvent) {
	b.reg.mu.Lock()
	t := b.reg.bySess[sid]
	if t == nil || proto.TargetTargetID(e.FrameID) != t.target {
		b.reg.mu.Unlock()
		return
	}
	if e.LoaderID != t.loader {
		t.loader = e.LoaderID
		t.lifecycle = map[proto.PageLifecycleEventName]bool{}
	}
	t.lifecycle[e.Name] = true
	t.loading = !t.lifecycle[proto.PageLifecycleEventNameLoad]
	close(t.lifeCh)
	t.lifeCh = make(chan struct{})
	info := t.info()
	b.reg.mu.Unlock()
	if e.Name == proto.PageLifecycleEventNameInit || e.Name == proto.PageLifecycleEventNameLoad {
		b.gate.PutTab(info)
	}
	if e.Name == proto.PageLifecycleEventNameDOMContentLoaded || e.Name == proto.PageLifecycleEventNameLoad {
		// Chromium does not report a title set by the document through
		// Target.targetInfoChanged; read it once the document is parsed
		// and again when it has loaded.
		target := t.target
		b.spawn(func() { b.refreshInfo(target) })
	}
}

// refreshInfo re-reads a page target's URL and title.
func (b *Browser) refreshInfo(target proto.TargetTargetID) {
	ctx, cancel := b.call(b.ctx)
	res, err := proto.TargetGetTargetInfo{TargetID: target}.Call(b.rod().Context(ctx))
	cancel()
	if err != nil || res.TargetInfo == nil {
		return
	}
	b.onTargetInfo(res.TargetInfo, false)
}
