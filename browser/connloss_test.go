package browser

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-rod/rod"
	"github.com/go-rod/rod/lib/cdp"
	"github.com/go-rod/rod/lib/proto"

	"github.com/tabwarden/tabwarden/agent/demo/fixture"
	"github.com/tabwarden/tabwarden/agent/demo/fixture/fixturetest"
	"github.com/tabwarden/tabwarden/consent/errcode"
)

// tcpProxy sits between a CDP client and Chromium's DevTools port; cut
// drops every connection through it, as a network (or a tunnel) would,
// while Chromium lives on.
type tcpProxy struct {
	ln    net.Listener
	mu    sync.Mutex
	conns []net.Conn
	wg    sync.WaitGroup
}

// proxied starts a proxy to the DevTools endpoint of ws and returns it
// with ws rewritten to go through it.
func proxied(t *testing.T, ws string) (*tcpProxy, string) {
	t.Helper()
	u, err := url.Parse(ws)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := (&net.ListenConfig{}).Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &tcpProxy{ln: ln}
	target := u.Host
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			d, err := (&net.Dialer{}).DialContext(context.Background(), "tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, d)
			p.mu.Unlock()
			p.wg.Add(2)
			go func() { defer p.wg.Done(); _, _ = io.Copy(d, c); d.Close() }()
			go func() { defer p.wg.Done(); _, _ = io.Copy(c, d); c.Close() }()
		}
	}()
	t.Cleanup(func() { p.cut(); p.wg.Wait() })
	u.Host = ln.Addr().String()
	return p, u.String()
}

// drop closes the connections through the proxy and keeps listening, as a
// network blip would: a client may connect again.
func (p *tcpProxy) drop() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		_ = c.Close()
	}
	p.conns = nil
}

func (p *tcpProxy) cut() {
	_ = p.ln.Close()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		_ = c.Close()
	}
}

// bareChromiumAt starts Chromium without tabwarden (the mandated flags
// only); the caller stops it.
func bareChromiumAt(t *testing.T) (*process, string) {
	t.Helper()
	bin, err := FindChromium("")
	if err != nil {
		t.Fatal(err)
	}
	args := []string{
		"--disable-background-networking", "--disable-component-update", "--no-first-run",
		"--headless=new", "--remote-debugging-port=0",
		"--user-data-dir=" + filepath.Join(t.TempDir(), "bare"),
	}
	if os.Geteuid() == 0 {
		args = append(args, "--no-sandbox")
	}
	proc, ws, err := start(testCtx(t), bin, append(args, "about:blank"))
	if err != nil {
		t.Fatal(err)
	}
	return proc, ws
}

// heldRequestGoesOutOnDrop shows the case live: in a bare Chromium, a
// navigation request held in a browser-level Fetch reaches the site the
// moment the CDP connection that held it drops. Nothing a client does
// after the drop can stop it.
func heldRequestGoesOutOnDrop(t *testing.T, site *fixture.Server) {
	t.Helper()
	proc, ws := bareChromiumAt(t)
	defer proc.stop(0)
	px, pws := proxied(t, ws)
	ctx, cancel := context.WithTimeout(testCtx(t), 30*time.Second)
	defer cancel()
	br := rod.New().ControlURL(pws).Context(ctx)
	if err := br.Connect(); err != nil {
		t.Fatal(err)
	}
	paused := make(chan struct{}, 8)
	go br.EachEvent(func(e *proto.FetchRequestPaused) { paused <- struct{}{} })()
	en := proto.FetchEnable{Patterns: []*proto.FetchRequestPattern{{URLPattern: "*", ResourceType: proto.NetworkResourceTypeDocument}}}
	if err := en.Call(br); err != nil {
		t.Fatal(err)
	}
	go func() { _, _ = proto.TargetCreateTarget{URL: site.URL + "/session"}.Call(br) }()
	select {
	case <-paused:
	case <-ctx.Done():
		t.Fatal("bare Chromium: the navigation was never held")
	}
	if n := site.Count("/session"); n != 0 {
		t.Fatalf("bare Chromium: %d requests while held", n)
	}
	px.cut()
	if _, err := site.WaitPath(ctx, "/session"); err != nil {
		t.Fatalf("not live: the held request did not go out when the connection dropped: %v", err)
	}
}

// A navigation waiting for its review when the DevTools websocket to a
// launched Chromium drops: Chromium, which lives on, is killed, and the
// site never hears the request, even when the operator approves after the
// drop.
func TestLostConnectionLaunchedFailsClosed(t *testing.T) {
	needChromium(t)
	a := fixturetest.Start(t)
	heldRequestGoesOutOnDrop(t, a)
	before := a.Total()

	g := newFakeGate()
	opts := Options{Headless: true, ProfileDir: filepath.Join(t.TempDir(), "profile"), Gate: g, TabLimit: DefaultTabLimit}
	ctx := testCtx(t)
	hold := testHold(t)
	proc, ws, err := launchChromium(ctx, &opts, nil, hold)
	if err != nil {
		t.Fatal(err)
	}
	px, pws := proxied(t, ws)
	b, err := open(ctx, opts, slog.New(slog.DiscardHandler), proc, pws, hold)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	e := &env{b: b, gate: g}
	pid := b.PID()
	tab := e.newTab(t)
	done := e.navigate(ctx, tab, a.URL+"/session")
	p := g.expectAsk(t, a.URL)

	px.cut()
	waitFor(t, "the launched Chromium killed", func() bool { return len(groupMembers(pid, false)) == 0 })
	p.reply <- nil // the operator approves, too late
	if err := <-done; err == nil {
		t.Fatal("the navigation succeeded across a lost connection")
	}
	if n := a.Total() - before; n != 0 {
		t.Fatalf("%d requests reached the site after the connection was lost: %+v", n, a.Requests()[before:])
	}
	g.until(t, "the header to say Chromium is gone", func(g *fakeGate) bool {
		return len(g.statuses) > 0 && strings.HasPrefix(g.statuses[len(g.statuses)-1], "Chromium is not running")
	})
}

// The same with an attached Chromium: it is the operator's and keeps
// running, the held request never goes out, agent operations fail
// browser_unavailable and the header says so.
func TestLostConnectionAttachedFailsClosed(t *testing.T) {
	needChromium(t)
	a, b := fixturetest.Start(t), fixturetest.Start(t)
	heldRequestGoesOutOnDrop(t, b)
	before := b.Total()

	proc, ws := bareChromiumAt(t)
	defer proc.stop(0)
	px, pws := proxied(t, ws)
	e := launch(t, func(o *Options) { o.BrowserURL = pws })
	tab := e.newTab(t)
	tb, err := e.b.reg.lookup(conv, tab)
	if err != nil {
		t.Fatal(err)
	}
	target := tb.target
	e.open(t, tab, a.URL, a.URL+"/link.html?to="+url.QueryEscape(b.URL+"/session"))
	e.click(t, tab, 50, 50)
	p := e.gate.expectAsk(t, b.URL)

	px.cut()
	<-e.b.Done()
	p.reply <- nil
	wantCode(t, e.b.Available(), errcode.BrowserUnavailable)
	_, err = e.b.NewTab(testCtx(t), conv, false)
	wantCode(t, err, errcode.BrowserUnavailable)
	e.gate.until(t, "the header to say the attached browser is gone", func(g *fakeGate) bool {
		return len(g.statuses) > 0 && strings.HasPrefix(g.statuses[len(g.statuses)-1], "the attached browser is gone; agent work is stopped")
	})
	// Chromium itself lives on and could still send it: count once the
	// hold has answered it.
	if !processAlive(proc.pid) {
		t.Fatal("an attached Chromium was killed")
	}
	detached(t, ws, target, a)
	unparked(t, e.b)
	if n := b.Total() - before; n != 0 {
		t.Fatalf("%d requests reached the site after the connection was lost: %+v", n, b.Requests()[before:])
	}
}

// detached waits, on a connection of its own straight to Chromium, until
// Chromium has noticed the drop (target no longer has a client), which is
// when it lets go of what that client held, and then until a navigation
// of its own has reached the barrier server: a request let go at the drop
// has been sent by then.
func detached(t *testing.T, ws string, target proto.TargetTargetID, barrier *fixture.Server) {
	t.Helper()
	ctx, cancel := context.WithTimeout(testCtx(t), 20*time.Second)
	defer cancel()
	sock := &cdp.WebSocket{}
	if err := sock.Connect(ctx, ws, nil); err != nil {
		t.Fatal(err)
	}
	defer sock.Close()
	c := rod.New().Client(cdp.New().Start(sock)).Context(ctx)
	for {
		res, err := proto.TargetGetTargets{}.Call(c)
		if err != nil {
			t.Fatal(err)
		}
		attached := false
		for _, ti := range res.TargetInfos {
			if ti.TargetID == target && ti.Attached {
				attached = true
			}
		}
		if !attached {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatal("Chromium never noticed the dropped connection")
		case <-time.After(50 * time.Millisecond):
		}
	}
	res, err := proto.TargetCreateTarget{URL: barrier.URL + "/record?kind=barrier"}.Call(c)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := barrier.WaitFor(ctx, func(r fixture.Request) bool { return r.Query == "kind=barrier" }); err != nil {
		t.Fatal(err)
	}
	_, _ = proto.TargetCloseTarget{TargetID: res.TargetID}.Call(c)
}

// unparked waits until the hold server has answered every request it
// held: a navigation refused there got its 204 and can never go out.
func unparked(t *testing.T, b *Browser) {
	t.Helper()
	waitFor(t, "every held request answered", func() bool {
		b.hold.mu.Lock()
		defer b.hold.mu.Unlock()
		return len(b.hold.parked) == 0
	})
}
