package browser

import (
	"context"
	"image"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-rod/rod/lib/proto"

	"github.com/tabwarden/tabwarden/browser/fixture"
	"github.com/tabwarden/tabwarden/consent"
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
	site := fixture.Start(t)
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
	site := fixture.Start(t)
	tab := e.newTab(t)
	e.open(t, tab, site.URL, site.URL+"/pageview.html")
	ctx := testCtx(t)
	wantCode(t, e.b.PageKey(ctx, tab, "", "b"), consent.CodeInvalidAction)
	wantCode(t, e.b.PageClick(ctx, tab, 100, 500), consent.CodeInvalidAction)
	e.gate.mu.Lock()
	e.gate.paused[conv] = true
	e.gate.mu.Unlock()
	for _, k := range []string{"b", "o", "b"} {
		if err := e.b.PageKey(ctx, tab, "", k); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.b.PageKey(ctx, tab, "Tab", ""); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"h", "e", "l", "m"} {
		if err := e.b.PageKey(ctx, tab, "", k); err != nil {
			t.Fatal(err)
		}
	}
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
