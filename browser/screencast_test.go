package browser

import (
	"bytes"
	"context"
	"image"
	_ "image/png"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-rod/rod/lib/proto"

	"github.com/tabwarden/tabwarden/agent/demo/fixture"
	"github.com/tabwarden/tabwarden/agent/demo/fixture/fixturetest"
	"github.com/tabwarden/tabwarden/consent"
	"github.com/tabwarden/tabwarden/consent/errcode"
)

// countFrames counts Page.screencastFrame events on b's DevTools
// connection, whatever session they come on: the browser side's own
// witness that nothing flows while no page view looks.
func countFrames(t *testing.T, b *Browser) *atomic.Int64 {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	var n atomic.Int64
	events := b.rod().Context(ctx).Event()
	go func() {
		for msg := range events {
			if msg.Method == "Page.screencastFrame" {
				n.Add(1)
			}
		}
	}()
	return &n
}

func near(a, b uint32) bool { d := int(a>>8) - int(b); return d > -30 && d < 30 }

// PageFrames shows the page (the fixture's solid block in its colour where
// it is), stops with its context, and no screencast frame reaches the
// connection before or after.
func TestPageFramesShowThePageOnlyWhileWatched(t *testing.T) {
	e := launch(t, nil)
	site := fixturetest.Start(t)
	tab := e.newTab(t)
	e.open(t, tab, site.URL, site.URL+"/pageview.html")
	frames := countFrames(t, e.b)
	time.Sleep(time.Second)
	if n := frames.Load(); n != 0 {
		t.Fatalf("%d screencast frames before anyone watched", n)
	}

	ctx, stop := context.WithCancel(testCtx(t))
	got := make(chan image.Image, 64)
	var cssW atomic.Int64
	done := make(chan error, 1)
	go func() {
		done <- e.b.PageFrames(ctx, tab, 400, 300, func(img image.Image, w, _ float64) {
			cssW.Store(int64(w))
			select {
			case got <- img:
			default:
			}
		})
	}()
	var img image.Image
	select {
	case img = <-got:
	case err := <-done:
		t.Fatalf("the stream ended: %v", err)
	case <-time.After(20 * time.Second):
		t.Fatal("no frame within 20s")
	}
	b := img.Bounds()
	r, g, bl, _ := img.At(b.Min.X+b.Dx()/8, b.Min.Y+b.Dy()/8).RGBA()
	if !near(r, 0) || !near(g, 160) || !near(bl, 255) {
		t.Errorf("the block's pixel is %d,%d,%d, want about 0,160,255", r>>8, g>>8, bl>>8)
	}
	r, g, bl, _ = img.At(b.Min.X+b.Dx()/2, b.Max.Y-b.Dy()/8).RGBA()
	if !near(r, 230) || !near(g, 40) || !near(bl, 40) {
		t.Errorf("the button's pixel is %d,%d,%d, want about 230,40,40", r>>8, g>>8, bl>>8)
	}
	if cssW.Load() <= 0 {
		t.Error("no CSS viewport width with the frame")
	}
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	after := frames.Load()
	time.Sleep(time.Second)
	if n := frames.Load(); n != after {
		t.Errorf("%d screencast frames after the view stopped", n-after)
	}
	t.Logf("frames while watched: %d", after)
}

// Input from the page view reaches a tab only while its conversation is
// taken over.
func TestPageInputOnlyDuringTakeOver(t *testing.T) {
	e := launch(t, nil)
	site := fixturetest.Start(t)
	tab := e.newTab(t)
	e.open(t, tab, site.URL, site.URL+"/pageview.html")
	ctx := testCtx(t)
	wantCode(t, e.b.PageKey(ctx, tab, "", "b"), errcode.InvalidAction)
	wantCode(t, e.b.PageClick(ctx, tab, 100, 500), errcode.InvalidAction)
	e.gate.mu.Lock()
	e.gate.paused[conv] = true
	e.gate.mu.Unlock()
	typeKeys(t, e.b, tab, "b", "o", "b", "Tab", "h", "e", "l", "m")
	if n := countReq(site, "POST", "/signin"); n != 0 {
		t.Fatalf("signed in before the click: %d", n)
	}
	m, err := proto.PageGetLayoutMetrics{}.Call(tabClient(t, e.b, tab))
	if err != nil {
		t.Fatal(err)
	}
	vh := float64(m.CSSLayoutViewport.ClientHeight)
	if err := e.b.PageClick(ctx, tab, 100, vh-20); err != nil {
		t.Fatal(err)
	}
	wctx, wc := context.WithTimeout(ctx, 5*time.Second)
	defer wc()
	if _, err := site.WaitPath(wctx, "/session"); err != nil {
		t.Fatalf("%v: %+v", err, site.Requests())
	}
	if n := countReq(site, "POST", "/signin"); n != 1 {
		t.Fatalf("%d sign-ins, want 1", n)
	}
}

func countReq(s *fixture.Server, method, path string) int {
	n := 0
	for _, r := range s.Requests() {
		if r.Method == method && r.Path == path {
			n++
		}
	}
	return n
}

// shot is a Chromium screenshot of tab's viewport, decoded.
func shot(t *testing.T, b *Browser, tab consent.TabID) image.Image {
	t.Helper()
	res, err := proto.PageCaptureScreenshot{Format: proto.PageCaptureScreenshotFormatPng}.Call(tabClient(t, b, tab))
	if err != nil {
		t.Fatal(err)
	}
	img, _, err := image.Decode(bytes.NewReader(res.Data))
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// The review's mark is a CDP Overlay: Chromium's own screenshot shows it
// over the target, the page's MutationObserver sees no change, and it goes
// when cleared. Liveness: a real DOM change is reported at once.
func TestMarkShowsInScreenshotWithoutDOMChange(t *testing.T) {
	e := launch(t, nil)
	site := fixturetest.Start(t)
	tab := e.newTab(t)
	e.open(t, tab, site.URL, site.URL+"/pageview.html")
	ctx := testCtx(t)
	m, err := proto.PageGetLayoutMetrics{}.Call(tabClient(t, e.b, tab))
	if err != nil {
		t.Fatal(err)
	}
	vw, vh := float64(m.CSSLayoutViewport.ClientWidth), float64(m.CSSLayoutViewport.ClientHeight)
	// The button fills the bottom 35% of the viewport; mark its middle.
	box := Mark{Tab: tab, X: vw / 4, Y: vh * 0.75, W: vw / 2, H: vh * 0.15}
	inside := func(img image.Image) (uint32, uint32, uint32) {
		k := float64(img.Bounds().Dx()) / vw
		r, g, b, _ := img.At(int((box.X+box.W/10)*k), int((box.Y+box.H/2)*k)).RGBA() // clear of the label
		return r >> 8, g >> 8, b >> 8
	}
	r0, g0, before := inside(shot(t, e.b, tab))
	t.Logf("before: %d,%d,%d viewport %vx%v", r0, g0, before, vw, vh)
	if err := e.b.MarkTarget(ctx, box); err != nil {
		t.Fatal(err)
	}
	_, _, marked := inside(shot(t, e.b, tab))
	if marked < before+20 {
		t.Errorf("the screenshot does not show the mark: blue %d inside the box, %d before", marked, before)
	}
	e.b.ClearMark()
	_, _, after := inside(shot(t, e.b, tab))
	if after > before+5 {
		t.Errorf("the mark stayed after ClearMark: blue %d, %d before", after, before)
	}
	time.Sleep(300 * time.Millisecond)
	if n := countQuery(site, "/record", "mutation="); n != 0 {
		t.Fatalf("the page saw %d DOM mutation reports while marked", n)
	}
	// Liveness: the same observer reports a real change.
	c := tabClient(t, e.b, tab)
	doc, err := proto.DOMGetDocument{}.Call(c)
	if err != nil {
		t.Fatal(err)
	}
	q, err := proto.DOMQuerySelector{NodeID: doc.Root.NodeID, Selector: "#block"}.Call(c)
	if err != nil {
		t.Fatal(err)
	}
	if err := (proto.DOMSetAttributeValue{NodeID: q.NodeID, Name: "data-x", Value: "1"}).Call(c); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if _, err := site.WaitFor(wctx, func(r fixture.Request) bool { return r.Path == "/record" }); err != nil {
		t.Fatalf("the page's observer did not report a real DOM change: %v", err)
	}
}

func countQuery(s *fixture.Server, path, sub string) int {
	n := 0
	for _, r := range s.Requests() {
		if r.Path == path && strings.Contains(r.Query, sub) {
			n++
		}
	}
	return n
}

// typeKeys sends keys to tab as the operator's keyboard does: a
// one-character key is typed text, a longer one a named key ("Tab").
func typeKeys(t *testing.T, b *Browser, tab consent.TabID, keys ...string) {
	t.Helper()
	for _, k := range keys {
		named, text := "", k
		if len([]rune(k)) > 1 {
			named, text = k, ""
		}
		if err := b.PageKey(testCtx(t), tab, named, text); err != nil {
			t.Fatal(err)
		}
	}
}
