package browser

import (
	"context"
	"math"
	"sync"

	"github.com/go-rod/rod/lib/proto"

	"github.com/tabwarden/tabwarden/consent"
)

// Mark is what an action review is about, in CSS pixels of the tab's
// viewport: the target element's box, or for a coordinate click the point
// (W and H zero).
type Mark struct {
	Tab        consent.TabID
	X, Y, W, H float64
}

// marker is the one mark on screen: the headed window shows one tab, and
// one review is on the console's screen at a time.
type marker struct {
	mu     sync.Mutex
	cur    Mark
	sid    proto.TargetSessionID
	detach func()
}

// pointHalf is half the side of a coordinate click's mark.
const pointHalf = 6

// MarkTarget draws m in its tab with a CDP Overlay highlight (design.md §4):
// the headed window and the page view's frames show it, the page's DOM
// does not change and its scripts cannot see it. It replaces the mark
// before; a zero Mark (no tab) clears it. The highlight lives on a CDP
// session of its own, detached when the mark goes.
func (b *Browser) MarkTarget(ctx context.Context, m Mark) error {
	mk := &b.mark
	mk.mu.Lock()
	defer mk.mu.Unlock()
	if m == mk.cur {
		return nil
	}
	b.clearMarkLocked(mk)
	if m.Tab == "" {
		return nil
	}
	sid, detach, err := b.ownSession(ctx, m.Tab)
	if err != nil {
		return err
	}
	cctx, cancel := b.call(ctx)
	defer cancel()
	c := client{b: b, sid: sid, ctx: cctx}
	if err := (proto.DOMEnable{}).Call(c); err != nil {
		detach()
		return b.opFailed("mark the target", err)
	}
	if err := (proto.OverlayEnable{}).Call(c); err != nil {
		detach()
		return b.opFailed("mark the target", err)
	}
	x, y, w, h := m.X, m.Y, m.W, m.H
	if w <= 0 || h <= 0 {
		x, y, w, h = x-pointHalf, y-pointHalf, 2*pointHalf, 2*pointHalf
	}
	fill := 0.25
	err = proto.OverlayHighlightRect{
		X: int(math.Floor(x)), Y: int(math.Floor(y)), Width: int(math.Ceil(w)), Height: int(math.Ceil(h)),
		Color:        &proto.DOMRGBA{R: 255, G: 0, B: 200, A: &fill},
		OutlineColor: &proto.DOMRGBA{R: 255, G: 0, B: 200},
	}.Call(c)
	if err != nil {
		detach()
		return b.opFailed("mark the target", err)
	}
	mk.cur, mk.sid, mk.detach = m, sid, detach
	return nil
}

// ClearMark removes the mark, if any.
func (b *Browser) ClearMark() {
	mk := &b.mark
	mk.mu.Lock()
	defer mk.mu.Unlock()
	b.clearMarkLocked(mk)
}

func (b *Browser) clearMarkLocked(mk *marker) {
	if mk.detach == nil {
		mk.cur = Mark{}
		return
	}
	ctx, cancel := b.call(b.ctx)
	_ = proto.OverlayHideHighlight{}.Call(client{b: b, sid: mk.sid, ctx: ctx})
	cancel()
	mk.detach()
	mk.cur, mk.sid, mk.detach = Mark{}, "", nil
}
