package webmcp

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/go-rod/rod"
	"github.com/go-rod/rod/lib/launcher"
	"github.com/go-rod/rod/lib/proto"

	"github.com/tabwarden/tabwarden/agent/demo/fixture/fixturetest"
	"github.com/tabwarden/tabwarden/consent"
	"github.com/tabwarden/tabwarden/consent/errcode"
)

const chromiumBin = "/usr/bin/chromium"

// fixture serves the fixture site's webmcp/ folder on 127.0.0.1 and witnesses every
// request the pages make. Channels carry each witnessed event so tests wait
// on them instead of sleeping.
type fixture struct {
	srv    *httptest.Server
	URL    string // http://127.0.0.1:port
	canary string

	mu      sync.Mutex
	records int
	paths   []string

	recorded  chan string
	cancelled chan string
	started   chan string
	frameDone chan string
	// hostileReady receives hostile.html's signal that every one of its
	// registrations has settled, with how many the browser accepted.
	hostileReady chan string
	// workerRan receives worker.html's worker's signal.
	workerRan chan string
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	f := &fixture{
		canary:   "CANARY-SESSION-" + randomID(),
		recorded: make(chan string, 64), cancelled: make(chan string, 64),
		started: make(chan string, 64), frameDone: make(chan string, 64),
		hostileReady: make(chan string, 8), workerRan: make(chan string, 8),
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/record", func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			http.Error(w, "POST only", http.StatusMethodNotAllowed)
			return
		}
		body, _ := io.ReadAll(r.Body)
		f.mu.Lock()
		f.records++
		n := f.records
		f.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"saved":%d}`, n)
		f.recorded <- string(body)
	})
	mux.HandleFunc("/session", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"note":%q}`, f.canary)
	})
	mux.HandleFunc("/cancelled", func(w http.ResponseWriter, r *http.Request) { f.cancelled <- "x" })
	mux.HandleFunc("/slow-started", func(w http.ResponseWriter, r *http.Request) { f.started <- "x" })
	mux.HandleFunc("/hostile-ready", func(w http.ResponseWriter, r *http.Request) { f.hostileReady <- r.URL.Query().Get("registered") })
	mux.HandleFunc("/frame-done", func(w http.ResponseWriter, r *http.Request) {
		f.frameDone <- r.URL.Query().Get("name") + ":" + r.URL.Query().Get("r")
	})
	mux.HandleFunc("/worker.html", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, `<!doctype html><title>Worker</title><script>new Worker("/worker.js");</script>`)
	})
	mux.HandleFunc("/worker.js", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/javascript")
		fmt.Fprint(w, `fetch("/worker-ran");`)
	})
	mux.HandleFunc("/worker-ran", func(w http.ResponseWriter, r *http.Request) { f.workerRan <- "x" })
	mux.Handle("/", fixturetest.SiteToolPages(t))
	ln := fixturetest.Listen(t)
	f.srv = &httptest.Server{Listener: ln, Config: &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.paths = append(f.paths, r.Method+" "+r.URL.Path)
		f.mu.Unlock()
		mux.ServeHTTP(w, r)
	})}}
	f.srv.Start()
	f.URL = f.srv.URL
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fixture) recordCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.records
}

func wait(t *testing.T, ch <-chan string, what string) string {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(20 * time.Second):
		t.Fatalf("gave up waiting for %s", what)
		return ""
	}
}

// waitHeard waits until the Site has heard n native registrations. A
// page's own report that its registrations settled travels over HTTP and
// can reach the fixture before Chromium's WebMCP.toolsAdded events have
// reached the Site over CDP; a listing taken then misses the rest.
func waitHeard(t *testing.T, s *Site, n int) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		s.mu.Lock()
		heard := 0
		for _, tools := range s.native {
			heard += len(tools)
		}
		s.mu.Unlock()
		if heard >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the site heard %d of the page's %d registrations", heard, n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// browsers are launched once per mode for the whole package run.
var (
	browsersMu sync.Mutex
	browsers   = map[bool]*rod.Browser{}
	launchers  []*launcher.Launcher
)

func TestMain(m *testing.M) {
	code := m.Run()
	browsersMu.Lock()
	for _, b := range browsers {
		_ = b.Close()
	}
	for _, l := range launchers {
		l.Kill()
		l.Cleanup()
	}
	browsersMu.Unlock()
	os.Exit(code)
}

// browserFor launches Chromium headless; native adds
// --enable-features=WebMCP, without it pages get the polyfill. rod's
// launcher turns site isolation off by default; we turn it back on, as in
// the operator's browser, so the fixture's cross-origin frames
// (127.0.0.1 vs localhost) are out-of-process frames in their own sessions.
func browserFor(t *testing.T, native bool) *rod.Browser {
	t.Helper()
	fixturetest.NeedChromium(t)
	browsersMu.Lock()
	defer browsersMu.Unlock()
	if b := browsers[native]; b != nil {
		return b
	}
	l := launcher.New().Bin(chromiumBin).NoSandbox(true).HeadlessNew(true).
		Set("disable-background-networking").Set("disable-component-update").Set("disable-sync").Set("no-first-run").
		Delete("disable-features").Delete("disable-site-isolation-trials").Set("site-per-process")
	if native {
		l = l.Set("enable-features", "WebMCP")
	} else {
		l = l.Delete("enable-features")
	}
	u, err := l.Launch()
	if err != nil {
		t.Fatalf("launch chromium: %v", err)
	}
	launchers = append(launchers, l)
	b := rod.New().ControlURL(u)
	if err := b.Connect(); err != nil {
		t.Fatal(err)
	}
	browsers[native] = b
	return b
}

type tabRig struct {
	t      *testing.T
	page   *rod.Page
	site   *Site
	broker *Broker
	conv   consent.ConversationID
	tab    consent.TabID
}

// bothModes runs body once on Chromium's native WebMCP domain and once on
// the polyfill: every behaviour must hold on both.
func bothModes(t *testing.T, body func(t *testing.T, native bool)) {
	for _, native := range []bool{true, false} {
		t.Run(modeName(native), func(t *testing.T) { body(t, native) })
	}
}

// toolsTab opens tools.html (the fixture's registering page) in a fresh
// tab and waits until all its frames have registered.
func toolsTab(t *testing.T, native bool, opts Options) (*fixture, *tabRig) {
	t.Helper()
	f := newFixture(t)
	r := openTab(t, native, f, "/tools.html", opts)
	waitHeardFrames(t, r, waitFrames(t, f))
	return f, r
}

func modeName(native bool) string {
	if native {
		return "native"
	}
	return "polyfill"
}

// openTab attaches a Site to a fresh blank tab, puts it under a broker and
// navigates it to path on the fixture.
func openTab(t *testing.T, native bool, f *fixture, path string, opts Options) *tabRig {
	t.Helper()
	b := browserFor(t, native)
	page, err := b.Page(proto.TargetCreateTarget{URL: "about:blank"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = page.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	site, err := Attach(ctx, page, ModeAuto)
	if err != nil {
		t.Fatal(err)
	}
	want := ModePolyfill
	if native {
		want = ModeNative
	}
	if site.Mode() != want {
		t.Fatalf("auto mode picked %s, want %s", site.Mode(), want)
	}
	r := &tabRig{t: t, page: page, site: site, broker: NewBroker(opts), conv: "conv-a", tab: consent.TabID("tab-" + randomID()[:6])}
	r.broker.AddTab(r.conv, r.tab, site)
	t.Cleanup(func() { r.broker.RemoveTab(r.tab) })
	r.navigate(f.URL + path)
	return r
}

func (r *tabRig) navigate(u string) {
	r.t.Helper()
	if err := r.page.Timeout(15 * time.Second).Navigate(u); err != nil {
		r.t.Fatal(err)
	}
	if err := r.page.Timeout(15 * time.Second).WaitLoad(); err != nil {
		r.t.Fatal(err)
	}
}

func (r *tabRig) list() *Listing {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	l, err := r.broker.List(ctx, r.conv, r.tab)
	if err != nil {
		r.t.Fatal(err)
	}
	return l
}

func toolID(t *testing.T, l *Listing, name string) string {
	t.Helper()
	for _, tl := range l.Tools {
		if tl.Name == name {
			return tl.ToolID
		}
	}
	t.Fatalf("tool %s not listed; listed: %v", name, names(l))
	return ""
}

func names(l *Listing) []string {
	var out []string
	for _, tl := range l.Tools {
		out = append(out, tl.Name)
	}
	return out
}

// call runs the caller's sequence without the gates: prepare, invoke.
func (r *tabRig) call(ctx context.Context, id string, input string) (json.RawMessage, error) {
	c, err := r.broker.Prepare(ctx, r.conv, r.tab, id, json.RawMessage(input))
	if err != nil {
		return nil, err
	}
	return c.Invoke(ctx)
}

func codeOf(err error) errcode.Code {
	if err == nil {
		return ""
	}
	return errcode.Of(err)
}

func hasRejected(l *Listing, name string, code errcode.Code) bool {
	for _, r := range l.RejectedTools {
		if r.Code == code && ((name == "" && r.Name == nil) || (r.Name != nil && *r.Name == name)) {
			return true
		}
	}
	return false
}
