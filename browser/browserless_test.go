package browser

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/tabwarden/tabwarden/agent/demo/fixture/fixturetest"
	"github.com/tabwarden/tabwarden/browser/fleettest"
	"github.com/tabwarden/tabwarden/consent/errcode"
	"github.com/tabwarden/tabwarden/policy"
)

const fleetToken = "bl-t0ken-for-the-tests"

// attachFleet attaches a Browser to bl with the token in the header and
// the hardening flags in browserless's launch query; extra is more query.
func attachFleet(t *testing.T, bl *fleettest.Browserless, pol *policy.Policy, extra string) *env {
	t.Helper()
	u := bl.WS + "?" + fleettest.LaunchQuery(LaunchFlags())
	if extra != "" {
		u += "&" + extra
	}
	return launch(t, func(o *Options) {
		o.BrowserURL, o.BrowserToken, o.Policy = u, fleetToken, pol
	})
}

// One browserless (CONCURRENT=2, QUEUED=2, a token) serves every case in
// turn: the cases hold at most two sessions at a time, except the queue
// case, which fills it on purpose.
func TestBrowserless(t *testing.T) {
	needChromium(t)
	bl := fleettest.Start(t, fleettest.Config{Token: fleetToken, Concurrent: 2, Queued: 2})

	t.Run("review_redirect_policy", func(t *testing.T) {
		a, b, c := fixturetest.Start(t), fixturetest.Start(t), fixturetest.Start(t)
		pol, err := policy.Parse("org.json", fmt.Appendf(nil, `{"execution":{"browserOrigins":[%q,%q]}}`, a.URL, b.URL))
		if err != nil {
			t.Fatal(err)
		}
		e := attachFleet(t, bl, pol, "")
		if s := e.b.String(); strings.Contains(s, fleetToken) || !strings.HasPrefix(s, "attached, no network wall · "+bl.WS) {
			t.Fatalf("header %q", s)
		}
		// browserless's launch query gave the launch flags: only
		// preloading, which no flag controls, is left unguaranteed.
		if gaps := e.b.Gaps(); len(gaps) != 1 || gaps[0] != preloadingGap {
			t.Errorf("gaps through browserless with the launch flags: %q", gaps)
		}
		tab := e.newTab(t)
		// The open review holds: nothing reaches a before the key.
		done := e.navigate(testCtx(t), tab, a.URL+"/session")
		p := e.gate.expectAsk(t, a.URL)
		if n := a.Total(); n != 0 {
			t.Fatalf("%d requests reached a before the review", n)
		}
		p.reply <- nil
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		// A 302 to b is a review of its own; denied, b hears nothing.
		tab = e.newTab(t)
		done = e.navigate(testCtx(t), tab, a.URL+"/redirect?to="+url.QueryEscape(b.URL+"/session"))
		e.gate.expectAsk(t, a.URL).reply <- nil
		e.gate.expectAsk(t, b.URL).reply <- deny()
		wantCode(t, <-done, errcode.UserDenied)
		if n := b.Total(); n != 0 {
			t.Fatalf("%d requests reached b after the denied redirect", n)
		}
		// Policy: sub-resources to c (not in browserOrigins) never leave.
		tab = e.newTab(t)
		e.open(t, tab, a.URL, a.URL+"/subresources.html?other="+url.QueryEscape(c.URL))
		e.gate.until(t, "six blocked sub-resources", func(g *fakeGate) bool { return g.tabs[tab].BlockedRequests >= 6 })
		if _, err := a.WaitPath(testCtx(t), "/record"); err != nil {
			t.Fatal(err)
		}
		if n := c.Total(); n != 0 {
			t.Fatalf("%d requests reached the server policy forbids", n)
		}
	})

	t.Run("two_consoles_isolated", func(t *testing.T) {
		a := fixturetest.Start(t)
		e1, e2 := attachFleet(t, bl, nil, ""), attachFleet(t, bl, nil, "")
		t1 := e1.newTab(t)
		e1.open(t, t1, a.URL, a.URL+"/session?console=1")
		if pids := bl.ChromiumPIDs(); len(pids) != 2 {
			t.Fatalf("two consoles, %d Chromium processes under browserless", len(pids))
		}
		for _, ti := range e2.b.reg.ownedTargets() {
			t.Fatalf("console 2 owns a target it did not open: %s", ti)
		}
		e2.gate.mu.Lock()
		defer e2.gate.mu.Unlock()
		for _, info := range e2.gate.tabs {
			if strings.Contains(info.URL, "console=1") {
				t.Fatalf("console 2 sees console 1's tab: %+v", info)
			}
		}
	})

	t.Run("killed_chromium_fails_closed_then_attaches_again", func(t *testing.T) {
		a, b := fixturetest.Start(t), fixturetest.Start(t)
		e := attachFleet(t, bl, nil, "")
		pids := bl.ChromiumPIDs()
		if len(pids) != 1 {
			t.Fatalf("want the one Chromium of this session, found %v", pids)
		}
		tab := e.newTab(t)
		e.open(t, tab, a.URL, a.URL+"/link.html?to="+url.QueryEscape(b.URL+"/session"))
		e.click(t, tab, 50, 50)
		p := e.gate.expectAsk(t, b.URL)
		gone := e.b.Done()
		if err := syscall.Kill(pids[0], syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		<-gone
		p.reply <- nil // approved too late
		if err := e.b.Available(); err != nil {
			wantCode(t, err, errcode.BrowserUnavailable)
		}
		waitFor(t, "the console to attach again", func() bool { return e.b.Available() == nil })
		if n := b.Total(); n != 0 {
			t.Fatalf("%d requests reached b across the killed browser", n)
		}
		tab = e.newTab(t)
		done := e.navigate(testCtx(t), tab, b.URL+"/session")
		e.gate.expectAsk(t, b.URL).reply <- nil
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if b.Count("/session") != 1 {
			t.Fatalf("the new session's approved navigation: %d requests", b.Count("/session"))
		}
	})

	t.Run("session_timeout_408", func(t *testing.T) {
		// browserless's own timeout for this session: 10 s (it counts from
		// the queue, so it must outlast a slow Chromium start), then it
		// writes its 408 onto the socket.
		e := attachFleet(t, bl, nil, "timeout=10000")
		gone := e.b.Done()
		select {
		case <-gone:
		case <-time.After(30 * time.Second):
			t.Fatal("browserless never ended the session")
		}
		if err := e.b.Available(); err != nil {
			wantCode(t, err, errcode.BrowserUnavailable)
		}
		e.gate.until(t, "the header to say the browser is gone", func(g *fakeGate) bool {
			for _, s := range g.statuses {
				if strings.HasPrefix(s, StatusAttachedGone) {
					return true
				}
			}
			return false
		})
		if !strings.Contains(bl.Logs(), "408") && !strings.Contains(strings.ToLower(bl.Logs()), "timeout") {
			t.Logf("browserless logged no timeout; its log:\n%s", bl.Logs())
		}
	})

	t.Run("queue_waits_then_full_is_clear", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(testCtx(t), 60*time.Second)
		defer cancel()
		hold := func() *websocket.Conn {
			c, _, err := websocket.Dial(ctx, bl.WS, &websocket.DialOptions{HTTPHeader: authHeader(fleetToken)}) //nolint:bodyclose // the websocket library owns the handshake body
			if err != nil {
				t.Fatalf("hold a slot: %v", err)
			}
			return c
		}
		running := []*websocket.Conn{hold(), hold()}
		defer func() {
			for _, c := range running {
				_ = c.CloseNow()
			}
		}()
		// The console queues (one of two places) and says so.
		waiting := make(chan string, 1)
		g := newFakeGate()
		type result struct {
			b   *Browser
			err error
		}
		attached := make(chan result, 1)
		go func() {
			b, err := Launch(ctx, Options{BrowserURL: bl.WS, BrowserToken: fleetToken, Gate: g,
				Waiting: func(s string) { waiting <- s }})
			attached <- result{b, err}
		}()
		select {
		case line := <-waiting:
			if line != StatusWaitingForSlot+bl.WS {
				t.Errorf("waiting line %q", line)
			}
		case r := <-attached:
			t.Fatalf("attached with every slot taken: %v", r.err)
		}
		// Fill the queue's other place, then one more is refused.
		queued := make(chan *websocket.Conn, 1)
		go func() {
			c, _, err := websocket.Dial(ctx, bl.WS, &websocket.DialOptions{HTTPHeader: authHeader(fleetToken)}) //nolint:bodyclose // the websocket library owns the handshake body
			if err == nil {
				queued <- c
			}
			close(queued)
		}()
		waitFor(t, "two sessions queued", func() bool { _, q := bl.Pressure(t); return q == 2 })
		_, err := Launch(ctx, Options{BrowserURL: bl.WS + "?token=" + fleetToken, Gate: newFakeGate()})
		wantCode(t, err, errcode.BrowserUnavailable)
		if !strings.Contains(err.Error(), "queue is full") || strings.Contains(err.Error(), fleetToken) {
			t.Fatalf("a full queue says %q", err)
		}
		// A slot frees: the queued console attaches.
		_ = running[0].CloseNow()
		r := <-attached
		if r.err != nil {
			t.Fatal(r.err)
		}
		_ = r.b.Close()
		cancel()
		for c := range queued {
			_ = c.CloseNow()
		}
	})
}
