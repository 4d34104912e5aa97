package browser

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-rod/rod/lib/proto"

	"github.com/tabwarden/tabwarden/agent/demo/fixture/fixturetest"
	"github.com/tabwarden/tabwarden/consent"
	"github.com/tabwarden/tabwarden/consent/errcode"
)

const conv = consent.ConversationID("c1")

func needChromium(t *testing.T) {
	t.Helper()
	fixturetest.NeedChromium(t)
}

type env struct {
	b    *Browser
	gate *fakeGate
}

func launch(t *testing.T, mod func(*Options)) *env {
	t.Helper()
	needChromium(t)
	g := newFakeGate()
	opts := Options{Headless: true, ProfileDir: filepath.Join(t.TempDir(), "profile"), Gate: g}
	if mod != nil {
		mod(&opts)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	b, err := Launch(ctx, opts)
	if err != nil {
		t.Fatalf("launch: %v", err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return &env{b: b, gate: g}
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// navigate runs Navigate in the background, since it returns only after
// the review the test is about to answer.
func (e *env) navigate(ctx context.Context, tab consent.TabID, u string) <-chan error {
	done := make(chan error, 1)
	go func() { done <- e.b.Navigate(ctx, conv, tab, u) }()
	return done
}

func (e *env) newTab(t *testing.T) consent.TabID {
	t.Helper()
	id, err := e.b.NewTab(testCtx(t), conv, false)
	if err != nil {
		t.Fatalf("new tab: %v", err)
	}
	return id
}

// open navigates tab to u, approving the one review for origin.
func (e *env) open(t *testing.T, tab consent.TabID, origin, u string) {
	t.Helper()
	done := e.navigate(testCtx(t), tab, u)
	e.gate.expectAsk(t, origin).reply <- nil
	if err := <-done; err != nil {
		t.Fatalf("navigate %s: %v", u, err)
	}
}

func wantCode(t *testing.T, err error, code errcode.Code) {
	t.Helper()
	if err == nil {
		t.Fatalf("got no error, want %s", code)
	}
	if got := errcode.Of(err); got != code {
		t.Fatalf("got %s (%v), want %s", got, err, code)
	}
}

// tabClient is a CDP client on tab's session, as the test's own hands on
// the page (the person, or the page itself), bounded by the test's deadline.
func tabClient(t *testing.T, b *Browser, tab consent.TabID) client {
	t.Helper()
	tb, err := b.reg.lookup(conv, tab)
	if err != nil {
		t.Fatal(err)
	}
	ctx := testCtx(t)
	sid, err := b.session(ctx, tb)
	if err != nil {
		t.Fatal(err)
	}
	return client{b: b, sid: sid, ctx: ctx}
}

// click presses the left button at x,y of tab's viewport (a user gesture,
// so popups are allowed).
func (e *env) click(t *testing.T, tab consent.TabID, x, y float64) {
	t.Helper()
	c := tabClient(t, e.b, tab)
	for _, typ := range []proto.InputDispatchMouseEventType{proto.InputDispatchMouseEventTypeMousePressed, proto.InputDispatchMouseEventTypeMouseReleased} {
		err := proto.InputDispatchMouseEvent{Type: typ, X: x, Y: y, Button: proto.InputMouseButtonLeft, ClickCount: 1}.Call(c)
		if err != nil {
			t.Fatalf("click: %v", err)
		}
	}
}

// waitURL waits until Chromium itself reports tab at want.
func (e *env) waitURL(t *testing.T, tab consent.TabID, want string) {
	t.Helper()
	e.gate.until(t, "tab "+string(tab)+" at "+want, func(g *fakeGate) bool {
		return g.tabs[tab].URL == want
	})
}

func TestDirectOpenWaitsForConsent(t *testing.T) {
	a := fixturetest.Start(t)
	e := launch(t, nil)
	tab := e.newTab(t)
	done := e.navigate(testCtx(t), tab, a.URL+"/signin.html")
	p := e.gate.expectAsk(t, a.URL)
	if p.req.Tab != tab || p.req.Conversation != conv {
		t.Fatalf("review for tab %s conv %s, want %s %s", p.req.Tab, p.req.Conversation, tab, conv)
	}
	if n := a.Total(); n != 0 {
		t.Fatalf("%d requests reached the site before consent", n)
	}
	p.reply <- nil
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if a.Count("/signin.html") != 1 {
		t.Fatalf("after approval the page was requested %d times", a.Count("/signin.html"))
	}
	e.waitURL(t, tab, a.URL+"/signin.html")

	// Same origin again: the grant covers it, no second review.
	if err := e.b.Navigate(testCtx(t), conv, tab, a.URL+"/session"); err != nil {
		t.Fatal(err)
	}
	e.gate.noAsk(t)
}

func TestDirectOpenDenied(t *testing.T) {
	a := fixturetest.Start(t)
	e := launch(t, nil)
	tab := e.newTab(t)
	done := e.navigate(testCtx(t), tab, a.URL+"/index.html")
	e.gate.expectAsk(t, a.URL).reply <- deny()
	wantCode(t, <-done, errcode.UserDenied)
	e.waitURL(t, tab, "about:blank")
	if n := a.Total(); n != 0 {
		t.Fatalf("%d requests reached the site after denial", n)
	}
}
