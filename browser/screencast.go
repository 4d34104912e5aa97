package browser

import (
	"bytes"
	"context"
	"image"
	"image/jpeg"
	"time"

	"github.com/go-rod/rod/lib/proto"

	"github.com/tabwarden/tabwarden/consent"
	"github.com/tabwarden/tabwarden/consent/errcode"
)

// The page view's frames (design.md §13). They are the operator's eyes: held
// in memory only for as long as the caller's deliver keeps them, never
// written to a file, the audit log or a log line, and never handed to the
// agent side (agent.Browser has no such method).
const (
	// FrameInterval is the frame budget: at most one frame per interval.
	// Chromium sends the next screencast frame only after the previous
	// one is acknowledged, so waiting before the ack also drops every
	// frame the page painted meanwhile.
	FrameInterval = 100 * time.Millisecond
	// frameQuality is the JPEG quality asked of Chromium: enough for a
	// terminal's few thousand cells, cheap to decode.
	frameQuality = 60
	// firstFrameWait is how long a stream waits for its first screencast
	// frame before it takes a screenshot: a page that does not repaint
	// (a static page, a tab in the background) sends none.
	firstFrameWait = 700 * time.Millisecond
)

// PageFrames streams pictures of tab's viewport to deliver until ctx ends:
// a screenshot at once, then Page.startScreencast frames at most one per
// FrameInterval, scaled by Chromium to fit maxW×maxH pixels. cssW and cssH
// are the viewport's size in CSS pixels, so a point on the picture maps to
// a page point. deliver runs on the stream's goroutine and must not block
// (keep the newest, drop the rest). The stream has its own CDP session,
// detached when it ends, so the screencast stops with it: nothing flows
// while nobody looks. Errors: tab_closed, browser_unavailable,
// browser_operation_failed.
func (b *Browser) PageFrames(ctx context.Context, tab consent.TabID, maxW, maxH int, deliver func(img image.Image, cssW, cssH float64)) error {
	sid, detach, err := b.ownSession(ctx, tab)
	if err != nil {
		return err
	}
	defer detach()
	sctx, stop := context.WithCancel(ctx)
	defer stop()
	// Subscribe before the screencast starts so no frame is missed; the
	// subscription ends with sctx.
	events := b.rod().Context(sctx).Event()
	c := client{b: b, sid: sid, ctx: sctx}

	q := frameQuality
	start := proto.PageStartScreencast{Format: proto.PageStartScreencastFormatJpeg, Quality: &q, MaxWidth: &maxW, MaxHeight: &maxH}
	cctx, cancel := b.call(sctx)
	err = start.Call(client{b: b, sid: sid, ctx: cctx})
	cancel()
	if err != nil {
		return b.opFailed("start the page view", err)
	}
	defer func() {
		cctx, cancel := b.call(b.ctx)
		defer cancel()
		_ = proto.PageStopScreencast{}.Call(client{b: b, sid: sid, ctx: cctx})
	}()

	first := time.NewTimer(firstFrameWait)
	defer first.Stop()
	got := false
	for {
		select {
		case <-sctx.Done():
			return nil
		case <-b.ctx.Done():
			return nil
		case <-first.C:
			if !got {
				b.screenshotFrame(sctx, c, maxW, maxH, deliver)
			}
		case msg, ok := <-events:
			if !ok {
				return nil
			}
			if msg.SessionID != sid {
				continue
			}
			if msg.Method == "Target.detachedFromTarget" || msg.Method == "Inspector.detached" {
				return nil
			}
			if msg.Method != "Page.screencastFrame" {
				continue
			}
			e := &proto.PageScreencastFrame{}
			if !msg.Load(e) {
				continue
			}
			got = true
			if img, err := jpeg.Decode(bytes.NewReader(e.Data)); err == nil && e.Metadata != nil {
				deliver(img, e.Metadata.DeviceWidth, e.Metadata.DeviceHeight)
			}
			// The budget: the ack that lets Chromium send the next frame
			// waits out the rest of the interval.
			select {
			case <-time.After(FrameInterval):
			case <-sctx.Done():
				return nil
			}
			actx, cancel := b.call(sctx)
			_ = proto.PageScreencastFrameAck{SessionID: e.SessionID}.Call(client{b: b, sid: sid, ctx: actx})
			cancel()
		}
	}
}

// screenshotFrame delivers one screenshot of the viewport, for a page that
// sends no screencast frame. Failures are ignored: the view stays as it was.
func (b *Browser) screenshotFrame(ctx context.Context, c client, maxW, maxH int, deliver func(image.Image, float64, float64)) {
	cctx, cancel := b.call(ctx)
	defer cancel()
	c.ctx = cctx
	m, err := proto.PageGetLayoutMetrics{}.Call(c)
	if err != nil || m.CSSLayoutViewport == nil {
		return
	}
	w, h := float64(m.CSSLayoutViewport.ClientWidth), float64(m.CSSLayoutViewport.ClientHeight)
	if w <= 0 || h <= 0 {
		return
	}
	scale := min(float64(maxW)/w, float64(maxH)/h, 1)
	q := frameQuality
	shot, err := proto.PageCaptureScreenshot{
		Format: proto.PageCaptureScreenshotFormatJpeg, Quality: &q,
		Clip: &proto.PageViewport{X: 0, Y: 0, Width: w, Height: h, Scale: scale},
	}.Call(c)
	if err != nil {
		return
	}
	if img, err := jpeg.Decode(bytes.NewReader(shot.Data)); err == nil {
		deliver(img, w, h)
	}
}

// ownSession attaches a flat CDP session of its own to tab's target, for
// a stream or a mark that must end with its owner; detach ends it.
func (b *Browser) ownSession(ctx context.Context, tab consent.TabID) (proto.TargetSessionID, func(), error) {
	if err := b.alive(); err != nil {
		return "", nil, err
	}
	target, err := b.targetOf(tab)
	if err != nil {
		return "", nil, err
	}
	cctx, cancel := b.call(ctx)
	defer cancel()
	res, err := proto.TargetAttachToTarget{TargetID: target, Flatten: true}.Call(b.rod().Context(cctx))
	if err != nil {
		return "", nil, b.opFailed("attach to the tab", err)
	}
	sid := res.SessionID
	return sid, func() {
		dctx, cancel := b.call(b.ctx)
		defer cancel()
		_ = proto.TargetDetachFromTarget{SessionID: sid}.Call(b.rod().Context(dctx))
	}, nil
}

// targetOf is tab's CDP target; tab_closed when it is gone.
func (b *Browser) targetOf(tab consent.TabID) (proto.TargetTargetID, error) {
	b.reg.mu.Lock()
	defer b.reg.mu.Unlock()
	t := b.reg.byID[tab]
	if t == nil || t.closed {
		return "", errcode.Errorf(errcode.TabClosed, errcode.NextListTabs, "tab %s is closed", tab)
	}
	return t.target, nil
}
