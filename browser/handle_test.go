package browser

import (
	"context"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-rod/rod"
	"github.com/go-rod/rod/lib/cdp"

	"github.com/tabwarden/tabwarden/agent/demo/fixture"
	"github.com/tabwarden/tabwarden/agent/demo/fixture/fixturetest"
	"github.com/tabwarden/tabwarden/browser/dom"
	"github.com/tabwarden/tabwarden/consent"
	"github.com/tabwarden/tabwarden/consent/errcode"
)

// refNamed is the ref of the element named name in obs.
func refNamed(t testing.TB, obs *dom.Observation, name string) string {
	t.Helper()
	for _, el := range obs.Elements {
		if el.Name == name {
			return el.Ref
		}
	}
	t.Fatalf("no %q in %s", name, obs.TextForm)
	return ""
}

// handleOf is the handle of conv's tab.
func (e *env) handleOf(t *testing.T, tab consent.TabID) *Handle {
	t.Helper()
	h, err := e.b.Handle(testCtx(t), conv, tab)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// A handle ends with its tab: after the tab closes every verb is
// tab_closed, and a take-over of its conversation expires its
// observations (the person may have done anything).
func TestHandleEndsWithItsTab(t *testing.T) {
	a := fixturetest.Start(t)
	e := launch(t, nil)
	ctx := testCtx(t)
	tab := e.newTab(t)
	e.open(t, tab, a.URL, a.URL+"/dom/basic.html")
	h := e.handleOf(t, tab)
	if again, err := e.b.Handle(ctx, conv, tab); err != nil || again != h {
		t.Fatalf("a second Handle = %p, %v; want the same handle %p", again, err, h)
	}
	if _, err := e.b.Handle(ctx, "c2", tab); errcode.Of(err) != errcode.WrongConversation {
		t.Fatalf("another conversation's Handle: %v", err)
	}
	obs, err := h.Observe(ctx, dom.ObserveRequest{})
	if err != nil {
		t.Fatal(err)
	}
	e.gate.emit(consent.Event{Kind: consent.EventTakeOver, Conversation: conv})
	_, err = h.Prepare(ctx, obs.ID, dom.Action{Type: "click", Ref: refNamed(t, obs, "Add to cart")})
	wantCode(t, err, errcode.StaleObservation)
	if a.Count("/record") != 0 {
		t.Fatal("the page sent a request")
	}

	if err := e.b.CloseTab(ctx, conv, tab); err != nil {
		t.Fatal(err)
	}
	_, err = h.Observe(ctx, dom.ObserveRequest{})
	wantCode(t, err, errcode.TabClosed)
	_, err = h.Viewport(ctx)
	wantCode(t, err, errcode.TabClosed)
	wantCode(t, h.AttachSiteTools(ctx), errcode.TabClosed)
	_, err = e.b.Handle(ctx, conv, tab)
	wantCode(t, err, errcode.TabClosed)
}

// countingCDP is the Browser's CDP client with every call's method
// recorded, in the order the calls are made.
type countingCDP struct {
	c  *cdp.Client
	mu sync.Mutex
	// calls since the last mark.
	calls []string
}

func (c *countingCDP) Event() <-chan *cdp.Event { return c.c.Event() }

func (c *countingCDP) Call(ctx context.Context, sid, method string, params any) ([]byte, error) {
	c.mu.Lock()
	c.calls = append(c.calls, method)
	c.mu.Unlock()
	return c.c.Call(ctx, sid, method, params)
}

func (c *countingCDP) mark() {
	c.mu.Lock()
	c.calls = nil
	c.mu.Unlock()
}

// beforeInput is the calls made since mark up to the first Input event,
// and whether there was one.
func (c *countingCDP) beforeInput() ([]string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	i := slices.IndexFunc(c.calls, func(m string) bool { return strings.HasPrefix(m, "Input.") })
	if i < 0 {
		return slices.Clone(c.calls), false
	}
	return slices.Clone(c.calls[:i]), true
}

// approveAll answers every review of g with approval until the test ends.
func approveAll(t testing.TB, g *fakeGate) {
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		for {
			select {
			case p := <-g.asks:
				p.reply <- nil
			case <-done:
				return
			}
		}
	}()
	t.Cleanup(func() { close(done); <-stopped })
}

// countedHandle launches a Browser and gives tab conv's handle over a CDP
// connection of its own whose calls cnt records.
func countedHandle(t testing.TB, g *fakeGate, site *fixture.Server, path string, background bool) (*Browser, *Handle, *countingCDP) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	opts := Options{Headless: true, ProfileDir: filepath.Join(t.TempDir(), "profile"), Gate: g, TabLimit: DefaultTabLimit}
	hold := testHold(t)
	proc, wsURL, err := launchChromium(ctx, &opts, nil, hold)
	if err != nil {
		t.Fatal(err)
	}
	b, err := open(ctx, opts, slog.New(slog.DiscardHandler), proc, wsURL, hold)
	if err == nil {
		t.Cleanup(func() { _ = b.Close() })
	} else {
		t.Fatal(err)
	}
	approveAll(t, g)
	tab, err := b.NewTab(ctx, conv, background)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Navigate(ctx, conv, tab, site.URL+path); err != nil {
		t.Fatal(err)
	}
	ws := &cdp.WebSocket{}
	if err := ws.Connect(ctx, wsURL, nil); err != nil {
		t.Fatal(err)
	}
	cnt := &countingCDP{c: cdp.New().Start(ws)}
	r := rod.New().Client(cnt).Context(b.ctx).NoDefaultDevice()
	if err := r.Connect(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ws.Close() })
	tb, err := b.reg.lookup(conv, tab)
	if err != nil {
		t.Fatal(err)
	}
	p, err := r.PageFromTarget(tb.target)
	if err != nil {
		t.Fatal(err)
	}
	h, err := b.adopt(tb, p)
	if err != nil {
		t.Fatal(err)
	}
	return b, h, cnt
}

// An approved act on a visible tab makes at most two CDP round trips
// before its first input event: the freshness re-check and the target's
// point (or the field's preparation), nothing else ahead of the input.
func TestActRoundTripsBeforeInput(t *testing.T) {
	needChromium(t)
	a := fixturetest.Start(t)
	_, h, cnt := countedHandle(t, newFakeGate(), a, "/dom/basic.html", false)
	ctx := testCtx(t)
	for _, act := range []struct {
		name string
		a    func(obs *dom.Observation) dom.Action
	}{
		{"click", func(obs *dom.Observation) dom.Action {
			return dom.Action{Type: "click", Ref: refNamed(t, obs, "Add to cart")}
		}},
		{"fill", func(obs *dom.Observation) dom.Action {
			return dom.Action{Type: "fill", Ref: refNamed(t, obs, "Search"), Text: "socks"}
		}},
		{"key", func(*dom.Observation) dom.Action { return dom.Action{Type: "key", Key: "Tab"} }},
		{"scroll", func(*dom.Observation) dom.Action { return dom.Action{Type: "scroll", DeltaY: 100} }},
	} {
		obs, err := h.Observe(ctx, dom.ObserveRequest{})
		if err != nil {
			t.Fatal(err)
		}
		prep, err := h.Prepare(ctx, obs.ID, act.a(obs))
		if err != nil {
			t.Fatalf("%s: %v", act.name, err)
		}
		cnt.mark()
		if _, err := prep.Dispatch(ctx); err != nil {
			t.Fatalf("%s: %v", act.name, err)
		}
		calls, input := cnt.beforeInput()
		if !input {
			t.Fatalf("%s sent no input event (calls %v)", act.name, calls)
		}
		t.Logf("%s: %v", act.name, calls)
		if len(calls) > 2 {
			t.Errorf("%s made %d CDP round trips before its input: %v", act.name, len(calls), calls)
		}
	}
	// The witness that the counted acts did land: the page's click handler
	// reported the click to the site.
	clicked := func(r fixture.Request) bool { return r.Path == "/record" && r.Query == "clicked=add" }
	if _, err := a.WaitFor(ctx, clicked); err != nil {
		t.Errorf("the click never reached the page: %v", err)
	}
}

// BenchmarkFirstActBackgroundTab times the first act (an approved click's
// dispatch) on a tab opened in the background, beside a later act on the
// same tab as the baseline of the same run, and the first act on a tab
// opened in front: first-ms, later-ms and visible-first-ms, the medians
// over b.N tabs of each. A background tab draws no frames; the first act
// used to wait 5 s for Chromium to answer its mouse move.
func BenchmarkFirstActBackgroundTab(b *testing.B) {
	if _, err := FindChromium(""); err != nil {
		b.Skipf("no Chromium: %v", err)
	}
	site, err := fixture.New()
	if err != nil {
		b.Fatal(err)
	}
	defer site.Close()
	g := newFakeGate()
	br, _, _ := countedHandle(b, g, site, "/dom/basic.html", false)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	click := func(h *Handle, name string) time.Duration {
		obs, err := h.Observe(ctx, dom.ObserveRequest{})
		if err != nil {
			b.Fatal(err)
		}
		prep, err := h.Prepare(ctx, obs.ID, dom.Action{Type: "click", Ref: refNamed(b, obs, name)})
		if err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		if _, err := prep.Dispatch(ctx); err != nil {
			b.Fatal(err)
		}
		return time.Since(start)
	}
	open := func(background bool) *Handle {
		tab, err := br.NewTab(ctx, conv, background)
		if err != nil {
			b.Fatal(err)
		}
		if err := br.Navigate(ctx, conv, tab, site.URL+"/dom/basic.html"); err != nil {
			b.Fatal(err)
		}
		h, err := br.Handle(ctx, conv, tab)
		if err != nil {
			b.Fatal(err)
		}
		return h
	}
	var first, later, visible []time.Duration
	b.ResetTimer()
	for range b.N {
		h := open(true)
		first = append(first, click(h, "Add to cart"))
		later = append(later, click(h, "Added")) // the button's name after a click
		v := open(false)
		visible = append(visible, click(v, "Add to cart"))
		for _, h := range []*Handle{h, v} {
			if err := br.CloseTab(ctx, conv, h.ID()); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.StopTimer()
	b.ReportMetric(medianMS(first), "first-ms")
	b.ReportMetric(medianMS(later), "later-ms")
	b.ReportMetric(medianMS(visible), "visible-first-ms")
}

// waitEnd waits for h's end and returns its reason.
func waitEnd(t *testing.T, h *Handle) EndReason {
	t.Helper()
	select {
	case <-h.Done():
	case <-testCtx(t).Done():
		t.Fatalf("handle of %s never ended (End %s)", h.ID(), h.End())
	}
	return h.End()
}

// A handle says itself what became of its tab: a take-over of its
// conversation counts (a resume does not), a page that closes its own tab
// ends it as tab closed, and a Slot's value stays with the handle. (A
// page may close only a tab a script opened: the one here is a popup.)
func TestHandleSaysHowItsTabEnded(t *testing.T) {
	a := fixturetest.Start(t)
	e := launch(t, nil)
	ctx := testCtx(t)
	opener := e.newTab(t)
	e.open(t, opener, a.URL, a.URL+"/popup.html?to=/e2e/close.html")
	e.click(t, opener, 50, 50)
	e.gate.expectAsk(t, a.URL).reply <- nil
	tab := e.popupOf(t, opener).ID
	if _, err := a.WaitPath(ctx, "/e2e/close.html"); err != nil {
		t.Fatal(err)
	}
	e.waitURL(t, tab, a.URL+"/e2e/close.html")
	h := e.handleOf(t, tab)
	slot := NewSlot[string]()
	v := slot.Get(h, func() *string { s := "mine"; return &s })
	if again := slot.Get(h, func() *string { t.Fatal("made twice"); return nil }); again != v {
		t.Fatalf("Slot.Get = %p, then %p", v, again)
	}
	if other := NewSlot[string]().Get(h, func() *string { s := "theirs"; return &s }); *other != "theirs" || *v != "mine" {
		t.Fatalf("two slots share a value: %q, %q", *v, *other)
	}

	if h.End() != NotEnded || h.TakeOvers() != 0 {
		t.Fatalf("a new handle: End %s, TakeOvers %d", h.End(), h.TakeOvers())
	}
	e.gate.emit(consent.Event{Kind: consent.EventTakeOver, Conversation: conv})
	e.gate.emit(consent.Event{Kind: consent.EventResume, Conversation: conv})
	e.gate.emit(consent.Event{Kind: consent.EventTakeOver, Conversation: "c2"})
	if n := h.TakeOvers(); n != 1 {
		t.Fatalf("TakeOvers = %d after one take-over of its conversation", n)
	}
	select {
	case <-h.Done():
		t.Fatal("a take-over ended the handle")
	default:
	}

	obs, err := h.Observe(ctx, dom.ObserveRequest{})
	if err != nil {
		t.Fatal(err)
	}
	prep, err := h.Prepare(ctx, obs.ID, dom.Action{Type: "click", Ref: refNamed(t, obs, "Close this tab")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := prep.Dispatch(ctx); err != nil && errcode.Of(err) != errcode.TabClosed {
		t.Fatal(err)
	}
	if r := waitEnd(t, h); r != EndTabClosed {
		t.Fatalf("the page closed its tab: End %s, want %s", r, EndTabClosed)
	}
	if _, err := e.b.Tab(tab); errcode.Of(err) != errcode.TabClosed {
		t.Fatalf("Tab after the page closed it: %v", err)
	}
	if slot.Get(h, func() *string { t.Fatal("value lost"); return nil }) != v {
		t.Fatal("the slot's value changed")
	}
}

// A handle whose tab died with Chromium ends as browser lost.
func TestHandleEndsWithChromium(t *testing.T) {
	a := fixturetest.Start(t)
	e := launch(t, nil)
	tab := e.newTab(t)
	e.open(t, tab, a.URL, a.URL+"/dom/basic.html")
	h := e.handleOf(t, tab)
	pid := e.b.PID()
	if err := syscall.Kill(-pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if r := waitEnd(t, h); r != EndBrowserLost {
		t.Fatalf("Chromium killed: End %s, want %s", r, EndBrowserLost)
	}
	waitFor(t, "the killed Chromium reaped", func() bool { return len(groupMembers(pid, false)) == 0 })
}
