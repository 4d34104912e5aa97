package browser

import (
	"context"
	"strings"
	"time"

	"github.com/go-rod/rod/lib/proto"

	"github.com/tabwarden/tabwarden/browser/cdpedge"
	"github.com/tabwarden/tabwarden/consent"
)

// StatusRelaunching is the browser header while a crashed Chromium is
// being replaced.
const StatusRelaunching = "relaunching…"

// statusBoard is the part of the consent engine that holds the TUI header;
// *consent.Engine satisfies it. A Gatekeeper without it gets no header
// updates (the Browser works the same).
type statusBoard interface {
	Snapshot() consent.State
	SetInfo(consent.Info)
}

var _ statusBoard = (*consent.Engine)(nil)

// showStatus puts s in the header's browser field, keeping the rest of the
// header as the wiring set it; an Unshown Browser leaves it alone.
func (b *Browser) showStatus(s string) {
	sb, ok := b.gate.(statusBoard)
	if !ok || b.opts.Unshown {
		return
	}
	info := sb.Snapshot().Info
	info.Browser = s
	sb.SetInfo(info)
}

// describe is the header line for a fresh connection: "Chromium headed ·
// <version>" (or "headless (no window)"), groups as String's, or for an
// attached browser attachedStatus.
func (b *Browser) describe(ctx context.Context, c *conn) string {
	if c.proc == nil {
		return b.attachedStatus()
	}
	cctx, cancel := b.call(ctx)
	defer cancel()
	v, err := proto.BrowserGetVersion{}.Call(c.rod.Context(cctx))
	version := "?"
	if err == nil {
		version = v.Product
		if i := strings.LastIndexByte(version, '/'); i >= 0 {
			version = version[i+1:]
		}
	}
	return "Chromium " + b.mode() + " · " + version
}

// lost runs when c's event stream ends. Unless the Browser is closing, that
// is a crash (or Chromium was quit): every tab the console knew is gone, so
// each becomes tab_closed, held navigation questions are withdrawn and the
// dead process group is reaped. The relaunch waits for the next operation.
func (b *Browser) lost(c *conn) {
	close(c.gone)
	b.mu.Lock()
	current := !b.closed && b.cur == c
	b.mu.Unlock()
	if !current {
		return
	}
	b.log.Warn("lost the connection to Chromium")
	// Nothing parked may go on to a site now (a launched Chromium is
	// killed next anyway; an attached one lives on unwatched).
	b.hold.refuseAll()
	c.teardown(0)
	stale := b.reg.ownedTargets()
	ids, hs := b.reg.closeAll()
	b.endHandles(hs, EndBrowserLost)
	for _, id := range ids {
		b.gate.RemoveTab(id)
	}
	b.cancelHeld("")
	if c.proc != nil {
		b.showStatus("Chromium is not running; the next operation relaunches it")
		return
	}
	// An attached browser is re-attached at once, not on the next
	// operation: a fleet may take a while to give a slot.
	b.mu.Lock()
	start := !b.closed && !b.relaunching
	if start {
		b.relaunching = true
		b.wg.Add(1)
	}
	b.mu.Unlock()
	if start {
		go func() {
			defer b.wg.Done()
			b.reattach(stale)
		}()
	}
}

// relaunch starts a new Chromium with the same options and profile and
// swaps it in as the current connection. It runs on its own goroutine,
// started by the first operation that found the connection gone; that
// operation and every one until the swap fail browser_unavailable.
func (b *Browser) relaunch() {
	b.showStatus(StatusRelaunching)
	b.conn().teardown(0) // lost did this already unless the loop is still draining
	ctx, cancel := context.WithTimeout(b.ctx, cdpedge.Launch)
	defer cancel()

	c, err := b.launchAgain(ctx)
	b.mu.Lock()
	b.relaunching = false
	closed := b.closed
	if err == nil && !closed {
		b.cur = c
		b.run(c)
	}
	b.mu.Unlock()
	switch {
	case err == nil && closed:
		c.teardown(0)
	case err != nil:
		b.log.Warn("relaunch Chromium", "err", err)
		if !closed {
			b.showStatus("Chromium could not be relaunched; the next operation tries again")
		}
	default:
		b.log.Info("relaunched Chromium", "pid", c.proc.pid)
		b.showStatus(b.describe(ctx, c))
	}
}

func (b *Browser) launchAgain(ctx context.Context) (*conn, error) {
	if err := waitProfileFree(ctx, b.opts.ProfileDir); err != nil {
		return nil, err
	}
	opts := b.opts
	proc, wsURL, err := launchChromium(ctx, &opts, b.log, b.hold)
	if err != nil {
		return nil, err
	}
	c, err := b.connect(ctx, wsURL, proc)
	if err != nil {
		proc.stop(0)
		return nil, err
	}
	return c, nil
}

// waitProfileFree waits until the dead Chromium's SingletonLock no longer
// names a live process. The dead group was reaped before this runs, so
// this normally passes at once; the bound covers a helper that outlived
// its group. Nothing signals a lock's release, hence the polling.
func waitProfileFree(ctx context.Context, profile string) error {
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		err := CheckProfileLock(profile)
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return err
		case <-tick.C:
		}
	}
}

// closeAll marks every known tab closed after Chromium died and returns
// their ids and handles; the targets are gone with the process.
func (r *registry) closeAll() ([]consent.TabID, []*Handle) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var ids []consent.TabID
	var hs []*Handle
	for id, t := range r.byID {
		if t.closed {
			continue
		}
		if t.handle != nil {
			hs = append(hs, t.handle)
		}
		t.closed = true
		close(t.lifeCh)
		t.lifeCh = make(chan struct{})
		ids = append(ids, id)
	}
	clear(r.byTarget)
	clear(r.bySess)
	clear(r.unclaimed)
	clear(r.guarded)
	clear(r.frames)
	clear(r.oopifs)
	clear(r.unfollowed)
	return ids, hs
}

// heldAsk registers a navigation question the hook is about to put to the
// engine, so take-over (or a crash) can withdraw it.
func (b *Browser) heldAsk(conv consent.ConversationID) (context.Context, func()) {
	ctx, cancel := context.WithCancel(b.ctx)
	key := new(int)
	b.heldMu.Lock()
	if b.held[conv] == nil {
		b.held[conv] = map[*int]context.CancelFunc{}
	}
	b.held[conv][key] = cancel
	b.heldMu.Unlock()
	return ctx, func() {
		b.heldMu.Lock()
		delete(b.held[conv], key)
		b.heldMu.Unlock()
		cancel()
	}
}

// cancelHeld withdraws the held questions of conv ("" = all).
func (b *Browser) cancelHeld(conv consent.ConversationID) {
	b.heldMu.Lock()
	defer b.heldMu.Unlock()
	for c, m := range b.held {
		if conv != "" && c != conv {
			continue
		}
		for _, cancel := range m {
			cancel()
		}
	}
}
