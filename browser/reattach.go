package browser

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/go-rod/rod/lib/proto"
)

// Re-attach backoff: the first try soon after the loss (a fleet gives a
// new session at once when it has a slot), then doubling up to a ceiling
// so a fleet that is down is not hammered.
const (
	reattachFirst = 500 * time.Millisecond
	reattachMax   = 30 * time.Second
)

// StatusAttachedGone starts the header while an attached browser is lost.
const StatusAttachedGone = "the attached browser is gone; agent work is stopped until the console attaches again"

// reattach replaces a lost attached connection, trying with backoff until
// it succeeds or the Browser closes. Each try is a new session: the
// endpoint is resolved again, the hook goes on inside connect before the
// connection is swapped in (so no agent work runs unguarded), and the tabs
// the console owned on the lost connection are closed if the browser still
// has them (a plain Chromium outlives a dropped socket; a fleet's session
// ends with it). Operations fail browser_unavailable until the swap.
func (b *Browser) reattach(stale []proto.TargetTargetID) {
	wait := reattachFirst
	for attempt := 1; ; attempt++ {
		b.showStatus(fmt.Sprintf("%s (next try in %s)", StatusAttachedGone, wait.Round(100*time.Millisecond)))
		select {
		case <-b.ctx.Done():
			b.endRelaunch()
			return
		case <-time.After(wait):
		}
		c, err := b.attachAgain(stale)
		b.mu.Lock()
		closed := b.closed
		if err == nil && !closed {
			b.cur = c
			b.relaunching = false
			b.run(c)
		}
		b.mu.Unlock()
		switch {
		case err == nil && closed:
			c.teardown(0)
			b.endRelaunch()
			return
		case err == nil:
			b.log.Info("attached again", "url", ShownURL(b.opts.BrowserURL), "attempt", attempt)
			b.showStatus(b.describe(b.ctx, c))
			b.noteGaps(b.ctx, c)
			return
		case closed:
			b.endRelaunch()
			return
		}
		b.log.Warn("attach again", "attempt", attempt, "err", err)
		wait = min(2*wait, reattachMax)
	}
}

func (b *Browser) endRelaunch() {
	b.mu.Lock()
	b.relaunching = false
	b.mu.Unlock()
}

// attachAgain is one re-attach try: a connection with the hook on, and the
// stale tabs closed through it.
func (b *Browser) attachAgain(stale []proto.TargetTargetID) (*conn, error) {
	b.mu.Lock()
	old := b.grid
	b.grid = nil
	b.mu.Unlock()
	old.delete() // the lost session's slot
	hctx, cancel := context.WithTimeout(b.ctx, b.opts.handshakeTimeout())
	wsURL, grid, err := resolveEndpoint(hctx, b.opts.BrowserURL, authHeader(b.opts.BrowserToken))
	cancel()
	if err != nil {
		return nil, unavailable("%s", scrub(&b.opts, fmt.Sprintf("cannot reach the browser at %s: %v", ShownURL(b.opts.BrowserURL), err)))
	}
	c, err := b.connect(b.ctx, wsURL, nil)
	if err != nil {
		grid.delete()
		return nil, err
	}
	b.mu.Lock()
	b.grid = grid
	b.mu.Unlock()
	for _, t := range stale {
		ctx, cancel := b.call(b.ctx)
		if _, err := (proto.TargetCloseTarget{TargetID: t}).Call(c.rod.Context(ctx)); err != nil && !isNoTarget(err) {
			// The tab stays in the browser with no owner here; say so.
			b.log.Warn("close a tab of the lost connection", "target", string(t), "err", err)
		}
		cancel()
	}
	return c, nil
}

// isNoTarget: the browser no longer has the target (a fleet's session
// ends with its socket, and its tabs with it).
func isNoTarget(err error) bool { return strings.Contains(err.Error(), "No target with given id") }
