package dom

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-rod/rod/lib/proto"
	"github.com/tabwarden/tabwarden/consent/errcode"
)

// fakeClock is a clock the test moves by hand.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func wantStale(t *testing.T, err error, why string) {
	t.Helper()
	ce := codeErr(t, err, errcode.StaleObservation)
	if !strings.Contains(ce.Message, why) {
		t.Fatalf("stale for the wrong reason: %q, want %q", ce.Message, why)
	}
	if ce.Dispatched || ce.Next != errcode.NextObserve {
		t.Fatalf("stale error %+v", ce)
	}
}

func TestExpiresAfterLifetime(t *testing.T) {
	st := startSite(t)
	clk := &fakeClock{t: time.Unix(1000, 0)}
	_, tab := openTab(t, st.URL+"/dom/basic.html", Options{Now: clk.Now})
	o := observe(t, tab, ObserveRequest{})
	add := Action{Type: "click", Ref: find(t, o, "button", "Add to cart").Ref}
	clk.Add(DefaultLifetime - time.Millisecond)
	p, err := tab.Prepare(testCtx(t), o.ID, add)
	if err != nil {
		t.Fatalf("just inside the lifetime: %v", err)
	}
	p.Release()
	clk.Add(time.Millisecond)
	_, err = tab.Prepare(testCtx(t), o.ID, add)
	wantStale(t, err, "older than 15s")
	st.none(t)
}

func TestReviewWaitDoesNotAgeObservation(t *testing.T) {
	st := startSite(t)
	clk := &fakeClock{t: time.Unix(1000, 0)}
	_, tab := openTab(t, st.URL+"/dom/basic.html", Options{Now: clk.Now})
	o := observe(t, tab, ObserveRequest{})
	add := Action{Type: "click", Ref: find(t, o, "button", "Add to cart").Ref}
	clk.Add(10 * time.Second)
	p, err := tab.Prepare(testCtx(t), o.ID, add)
	if err != nil {
		t.Fatal(err)
	}
	if p.Target == nil || p.Target.Role != "button" || p.Target.Name != "Add to cart" {
		t.Fatalf("review target %+v", p.Target)
	}
	clk.Add(50 * time.Second) // the operator reads the review
	// A denied review releases the observation unconsumed, clock running again.
	p.Release()
	if _, err := p.Dispatch(testCtx(t)); errcode.Of(err) != errcode.InvalidAction {
		t.Fatalf("dispatch after release: %v", err)
	}
	p, err = tab.Prepare(testCtx(t), o.ID, add)
	if err != nil {
		t.Fatalf("after a 50 s review the observation aged: %v", err)
	}
	clk.Add(time.Minute)
	if _, err := p.Dispatch(testCtx(t)); err != nil {
		t.Fatalf("dispatch after a long review: %v", err)
	}
	if st.record(t).Get("clicked") != "add" {
		t.Fatal("click did not reach the page")
	}
}

func TestExpiresOnMutationNavigationScrollViewport(t *testing.T) {
	st := startSite(t)
	page, tab := openTab(t, st.URL+"/dom/basic.html", Options{})
	click := func(o *Observation, name string) {
		t.Helper()
		mustAct(t, tab, o.ID, Action{Type: "click", Ref: find(t, o, "button", name).Ref})
	}

	t.Run("mutation", func(t *testing.T) {
		old := observe(t, tab, ObserveRequest{})
		click(observe(t, tab, ObserveRequest{}), "Mutate")
		// The DOM change is the page's own; wait for it from our world.
		waitInWorld(t, tab, `new Promise(r => { const c = () => document.body.hasAttribute("data-mutated") ? r(1) : setTimeout(c, 10); c(); })`)
		_, err := tab.Prepare(testCtx(t), old.ID, Action{Type: "click", Ref: find(t, old, "button", "Add to cart").Ref})
		wantStale(t, err, "the page changed")
	})
	t.Run("scroll", func(t *testing.T) {
		old := observe(t, tab, ObserveRequest{})
		o := observe(t, tab, ObserveRequest{})
		mustAct(t, tab, o.ID, Action{Type: "scroll", DeltaY: 300})
		waitInWorld(t, tab, `new Promise(r => scrollY > 0 ? r(scrollY) : addEventListener("scroll", () => r(scrollY), {once: true}))`)
		_, err := tab.Prepare(testCtx(t), old.ID, Action{Type: "key", Key: "Tab"})
		wantStale(t, err, "scrolled")
	})
	t.Run("viewport", func(t *testing.T) {
		o := observe(t, tab, ObserveRequest{})
		if err := (proto.EmulationSetDeviceMetricsOverride{Width: 1000, Height: 700, DeviceScaleFactor: 1}).Call(page.Context(testCtx(t))); err != nil {
			t.Fatal(err)
		}
		_, err := tab.Prepare(testCtx(t), o.ID, Action{Type: "key", Key: "Tab"})
		wantStale(t, err, "viewport")
	})
	t.Run("navigation", func(t *testing.T) {
		old := observe(t, tab, ObserveRequest{})
		o := observe(t, tab, ObserveRequest{})
		loaded := waitLoad(t, page)
		mustAct(t, tab, o.ID, Action{Type: "click", Ref: find(t, o, "link", "Next page").Ref})
		loaded()
		_, err := tab.Prepare(testCtx(t), old.ID, Action{Type: "key", Key: "Tab"})
		wantStale(t, err, "navigated")
	})
	t.Run("invalidate", func(t *testing.T) {
		o := observe(t, tab, ObserveRequest{})
		tab.Invalidate()
		_, err := tab.Prepare(testCtx(t), o.ID, Action{Type: "key", Key: "Tab"})
		wantStale(t, err, "taken over")
	})
}

func TestConsumedByFirstAct(t *testing.T) {
	st := startSite(t)
	_, tab := openTab(t, st.URL+"/dom/basic.html", Options{})
	o := observe(t, tab, ObserveRequest{})
	add := Action{Type: "click", Ref: find(t, o, "button", "Add to cart").Ref}
	// Two acts prepared on one observation: the first dispatch wins.
	p1, err := tab.Prepare(testCtx(t), o.ID, add)
	if err != nil {
		t.Fatal(err)
	}
	p2, err := tab.Prepare(testCtx(t), o.ID, Action{Type: "key", Key: "Tab"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p1.Dispatch(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	st.record(t)
	_, err = p2.Dispatch(testCtx(t))
	wantStale(t, err, "already used")
	_, err = act(t, tab, o.ID, add)
	wantStale(t, err, "already used")
	st.none(t)
	_, err = tab.Prepare(testCtx(t), "o1-00000000", add)
	wantCode(t, err, errcode.StaleObservation)
}

// TestExpiresOnInnerScrollAndFrameNavigation: changes the top document's
// DOM and window scroll do not show still expire an observation.
func TestExpiresOnInnerScrollAndFrameNavigation(t *testing.T) {
	st := startSite(t)
	_, tab := openTab(t, st.URL+"/dom/expiry.html", Options{})
	old := observe(t, tab, ObserveRequest{})
	o := observe(t, tab, ObserveRequest{})
	inside := find(t, o, "button", "Inside the box")
	mustAct(t, tab, o.ID, Action{Type: "scroll", X: f(float64(inside.Bounds.X + 5)), Y: f(float64(inside.Bounds.Y + 5)), DeltaY: 200})
	waitInWorld(t, tab, `new Promise(r => { const b = document.getElementById("box"); const c = () => b.scrollTop > 0 ? r(1) : setTimeout(c, 10); c(); })`)
	if s := waitInWorld(t, tab, `Promise.resolve(String(scrollY))`); s != "0" {
		t.Fatalf("the window scrolled (%s), not only the box", s)
	}
	_, err := tab.Prepare(testCtx(t), old.ID, Action{Type: "key", Key: "Tab"})
	wantStale(t, err, "scrolled")

	old = observe(t, tab, ObserveRequest{})
	o = observe(t, tab, ObserveRequest{})
	mustAct(t, tab, o.ID, Action{Type: "click", Ref: find(t, o, "link", "Child link").Ref})
	waitInWorld(t, tab, `new Promise(r => { const f = document.getElementById("child"); const c = () => f.contentDocument && f.contentDocument.title === "Next" && f.contentDocument.readyState === "complete" ? r(1) : setTimeout(c, 10); c(); })`)
	_, err = tab.Prepare(testCtx(t), old.ID, Action{Type: "key", Key: "Tab"})
	wantStale(t, err, "the page changed")
	st.none(t)
}
