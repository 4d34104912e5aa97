package dom

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-rod/rod"
	"github.com/go-rod/rod/lib/launcher"
	"github.com/go-rod/rod/lib/proto"

	"github.com/tabwarden/tabwarden/agent/demo/fixture"
	"github.com/tabwarden/tabwarden/consent/errcode"
)

// browser is one headless Chromium shared by the package's tests; each test
// gets its own tab.
var browser *rod.Browser

func TestMain(m *testing.M) {
	bin := os.Getenv("TABWARDEN_CHROMIUM")
	if bin == "" {
		bin = "/usr/bin/chromium"
	}
	l := launcher.New().Bin(bin).Set("headless", "new").
		Set("no-first-run").Set("disable-background-networking").Set("disable-component-update").
		Set("disable-sync").Set("window-size", "1280,800")
	if os.Geteuid() == 0 {
		l = l.NoSandbox(true)
	}
	u, err := l.Launch()
	if err != nil {
		fmt.Fprintln(os.Stderr, "launch chromium:", err)
		os.Exit(1)
	}
	browser = rod.New().ControlURL(u).NoDefaultDevice()
	if err := browser.Connect(); err != nil {
		fmt.Fprintln(os.Stderr, "connect chromium:", err)
		l.Kill()
		os.Exit(1)
	}
	code := m.Run()
	_ = browser.Close()
	l.Kill()
	l.Cleanup()
	os.Exit(code)
}

func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// openTab opens url in a fresh tab, waits for its load event and wraps it.
func openTab(t testing.TB, url string, opt Options) (*rod.Page, *Tab) {
	t.Helper()
	page, err := browser.Page(proto.TargetCreateTarget{URL: "about:blank"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = page.Close() })
	if err := (proto.EmulationSetDeviceMetricsOverride{Width: 1280, Height: 800, DeviceScaleFactor: 1}).Call(page); err != nil {
		t.Fatal(err)
	}
	navigate(t, page, url)
	return page, NewTab(page, "t1", opt)
}

func navigate(t testing.TB, page *rod.Page, url string) {
	t.Helper()
	ctx := testCtx(t)
	wait := page.Context(ctx).WaitNavigation(proto.PageLifecycleEventNameLoad)
	if _, err := (proto.PageNavigate{URL: url}).Call(page.Context(ctx)); err != nil {
		t.Fatal(err)
	}
	wait()
}

// waitLoad returns a func that blocks until the page's next load event.
func waitLoad(t testing.TB, page *rod.Page) func() {
	return page.Context(testCtx(t)).WaitNavigation(proto.PageLifecycleEventNameLoad)
}

func observe(t testing.TB, tab *Tab, req ObserveRequest) *Observation {
	t.Helper()
	o, err := tab.Observe(testCtx(t), req)
	if err != nil {
		t.Fatalf("observe: %v", err)
	}
	return o
}

// find returns the element with that role and name in o (all pages of it
// that o holds).
func find(t testing.TB, o *Observation, role, name string) Element {
	t.Helper()
	for _, e := range o.Elements {
		if e.Role == role && e.Name == name {
			return e
		}
	}
	t.Fatalf("no %s %q in observation:\n%s", role, name, o.TextForm)
	return Element{}
}

func act(t testing.TB, tab *Tab, obsID string, a Action) (Receipt, error) {
	t.Helper()
	ctx := testCtx(t)
	p, err := tab.Prepare(ctx, obsID, a)
	if err != nil {
		return Receipt{}, err
	}
	return p.Dispatch(ctx)
}

func mustAct(t testing.TB, tab *Tab, obsID string, a Action) {
	t.Helper()
	r, err := act(t, tab, obsID, a)
	if err != nil {
		t.Fatalf("act %+v: %v", a, err)
	}
	if !r.Dispatched || r.Outcome != "not_yet_verified" {
		t.Fatalf("receipt %+v", r)
	}
}

func wantCode(t testing.TB, err error, code errcode.Code) {
	t.Helper()
	var ce *errcode.Error
	if !errors.As(err, &ce) {
		t.Fatalf("want %s, got %v", code, err)
	}
	if ce.Code != code {
		t.Fatalf("want %s, got %s (%s)", code, ce.Code, ce.Message)
	}
}

// codeErr is wantCode that returns the error for further checks.
func codeErr(t testing.TB, err error, code errcode.Code) *errcode.Error {
	t.Helper()
	wantCode(t, err, code)
	var ce *errcode.Error
	errors.As(err, &ce)
	return ce
}

func f(v float64) *float64 { return &v }

// waitInWorld evaluates a promise-returning expression in the tab's
// isolated world and waits for it: the tests' way to wait for page state
// without sleeping or touching the main world.
func waitInWorld(t testing.TB, tab *Tab, expr string) string {
	t.Helper()
	ctx := testCtx(t)
	id, err := tab.worldID(ctx)
	if err != nil {
		t.Fatal(err)
	}
	res, err := proto.RuntimeEvaluate{Expression: expr, ContextID: id, AwaitPromise: true, ReturnByValue: true}.Call(tab.page.Context(ctx))
	if err != nil {
		t.Fatal(err)
	}
	if res.ExceptionDetails != nil {
		t.Fatalf("waitInWorld: %s", res.ExceptionDetails.Text)
	}
	return res.Result.Value.String()
}

// site serves the fixture site (agent/demo/fixture) on 127.0.0.1 and records every /record query:
// the page scripts' witness of what reached them. (httptest rather than
// fixture.Server: httptest.Close drops Chromium's pre-connected sockets at
// once instead of waiting out Shutdown's grace period.)
type site struct {
	URL     string
	records chan url.Values
}

func startSite(t testing.TB) *site {
	sub, err := fs.Sub(fixture.Site, "site")
	if err != nil {
		t.Fatal(err)
	}
	st := &site{records: make(chan url.Values, 64)}
	mux := http.NewServeMux()
	mux.HandleFunc("/record", func(w http.ResponseWriter, r *http.Request) {
		st.records <- r.URL.Query()
		w.WriteHeader(http.StatusNoContent)
	})
	mux.Handle("/", http.FileServerFS(sub))
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		mux.ServeHTTP(w, r)
	}))
	t.Cleanup(s.Close)
	st.URL = s.URL
	return st
}

// record waits for the next /record request.
func (s *site) record(t testing.TB) url.Values {
	t.Helper()
	select {
	case v := <-s.records:
		return v
	case <-testCtx(t).Done():
		t.Fatal("no /record request arrived")
		return nil
	}
}

// none fails if a /record request is already queued.
func (s *site) none(t testing.TB) {
	t.Helper()
	select {
	case v := <-s.records:
		t.Fatalf("unexpected /record?%s", v.Encode())
	default:
	}
}

// benchServer serves the shared bench page shape (see benchPage) at /app?n=N.
func benchServer(t testing.TB) *httptest.Server {
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := strconv.Atoi(r.URL.Query().Get("n"))
		n = max(1, min(20000, n))
		if r.URL.Query().Get("n") == "" {
			n = 100
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write([]byte(benchPage(n)))
	}))
	t.Cleanup(s.Close)
	return s
}

// benchPage is /work/shared/bench/pages.mjs's appPage in Go: the same
// deterministic storefront page of about n interactive elements.
func benchPage(n int) string {
	s := uint32(n*7919 + 17)
	r := func() float64 { s = s*1664525 + 1013904223; return float64(s) / (1 << 32) }
	words := strings.Fields("alpha bravo cargo delta ember fable giant harbor iris jade kilo lumen mango nova orbit pixel quartz raven solar tango ultra vivid willow xenon yonder zephyr")
	sentence := func(k int) string {
		w := make([]string, k)
		for i := range w {
			w[i] = words[int(r()*float64(len(words)))]
		}
		return strings.Join(w, " ")
	}
	var parts []string
	add := func(format string, a ...any) { parts = append(parts, fmt.Sprintf(format, a...)) }
	add(`<!doctype html><html><head><meta charset="utf-8"><title>Bench app %d</title>
<style>body{font-family:sans-serif;margin:0}nav a{margin:0 6px}.card{border:1px solid #ccc;margin:6px;padding:6px;display:inline-block;width:220px;vertical-align:top}.hidden{display:none}</style></head><body>`, n)
	add(`<header><nav aria-label="Main">`)
	for i := 0; i < 8; i++ {
		add(`<a href="/section/%d">%s %d</a>`, i, sentence(1), i)
	}
	add(`</nav><form role="search" action="/search"><label>Search <input name="q" type="search" placeholder="Search products"></label><button>Go</button></form></header><main>`)
	add(`<h1>Catalogue of %d things</h1><p>%s</p>`, n, sentence(40))
	made := 11
	for i := 0; made < n; i++ {
		kind := i % 5
		add(`<div class="card"><div><div><h3>%s #%d</h3><p>%s</p>`, sentence(2), i, sentence(12))
		switch kind {
		case 0:
			add(`<button type="button" onclick="this.textContent='Added'">Add to cart</button><a href="/item/%d">Details</a>`, i)
			made += 2
		case 1:
			add(`<label>Qty <input type="number" name="qty%d" value="1"></label><select name="size%d"><option>S</option><option>M</option><option>L</option></select>`, i, i)
			made += 2
		case 2:
			add(`<label><input type="checkbox" name="fav%d"> Favourite</label><a href="/item/%d/reviews">%d reviews</a>`, i, i, int(r()*500))
			made += 2
		case 3:
			add(`<span class="hidden"><button>Hidden action %d</button></span><div role="button" tabindex="0">Compare</div>`, i)
			made++
		default:
			add(`<textarea name="note%d" aria-label="Note %d"></textarea><button type="submit">Save note</button>`, i, i)
			made += 2
		}
		add(`</div></div></div>`)
	}
	add(`<table><caption>Prices</caption><thead><tr><th>Item</th><th>Price</th><th>Stock</th></tr></thead><tbody>`)
	rows := min(40, (n+9)/10)
	for j := 0; j < rows; j++ {
		add(`<tr><td>%s</td><td>%s</td><td>%d</td></tr>`, sentence(2), strconv.FormatFloat(r()*100, 'f', 2, 64), int(r()*90))
	}
	add(`</tbody></table></main><footer><p>%s</p></footer></body></html>`, sentence(20))
	return strings.Join(parts, "\n")
}
