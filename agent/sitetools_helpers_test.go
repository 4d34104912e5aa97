package agent_test

import (
	"context"
	crand "crypto/rand"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tabwarden/tabwarden/agent"
	"github.com/tabwarden/tabwarden/agent/demo/fixture/fixturetest"
	"github.com/tabwarden/tabwarden/browser"
	"github.com/tabwarden/tabwarden/consent"
	"github.com/tabwarden/tabwarden/consent/audit"
	"github.com/tabwarden/tabwarden/consent/errcode"
	"github.com/tabwarden/tabwarden/internal/logtest"
	"github.com/tabwarden/tabwarden/internal/stacktest"
	"github.com/tabwarden/tabwarden/webmcp"
)

// The site-tool end-to-end tests run the design.md §10 site-tool steps through
// agent.Dispatcher against a real Chromium, once with native WebMCP and once
// with the polyfill (Chromium launched without the feature). Each mode has
// one Chromium and one consent engine for the whole test binary run of
// TestSiteTools (the machine is small); each subtest has its own
// conversation, Dispatcher and fixture server, so its own grants, tabs and
// request counters. The witnesses are the fixture server (what reached the
// site) and the engine (which review is on screen); the tests wait on their
// signals, never on a clock.

// siteServer serves the fixture site's webmcp/ folder at its root on 127.0.0.1 (the pages
// name /record, /session and /frame-tool.html from the root) and witnesses
// every request. It is not fixture.Server because the site-tool pages
// need answers that server does not give: /record must answer JSON with
// the running count (save_draft reads it), /session a JSON note holding
// the canary secret, and frame documents may ask for Permissions-Policy
// tools=() with ?pp=none.
type siteServer struct {
	URL    string
	canary string

	mu      sync.Mutex
	paths   []string // "METHOD /path", in arrival order
	hosts   []string // each request's Host, beside paths
	uris    []string // each request's Host and request URI, for a failure's account
	records int
	changed chan struct{} // closed and replaced on each request
}

func startSiteServer(t *testing.T) *siteServer {
	t.Helper()
	s := &siteServer{canary: "CANARY-SESSION-" + siteRandomHex(t, 12), changed: make(chan struct{})}
	mux := http.NewServeMux()
	mux.HandleFunc("/record", func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			http.Error(w, "POST only", http.StatusMethodNotAllowed)
			return
		}
		s.mu.Lock()
		s.records++
		n := s.records
		s.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"saved":%d}`, n)
	})
	mux.HandleFunc("/session", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"note":%q}`, s.canary)
	})
	for _, p := range []string{"/cancelled", "/slow-started", "/frame-done", "/hostile-ready"} {
		mux.HandleFunc(p, func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) })
	}
	mux.Handle("/", fixturetest.SiteToolPages(t))
	ln := fixturetest.Listen(t)
	s.URL = "http://" + ln.Addr().String()
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.paths = append(s.paths, r.Method+" "+r.URL.Path)
		s.hosts = append(s.hosts, r.Host)
		s.uris = append(s.uris, r.Host+r.URL.RequestURI())
		close(s.changed)
		s.changed = make(chan struct{})
		s.mu.Unlock()
		// A cached response would hide a request from the witness.
		w.Header().Set("Cache-Control", "no-store")
		mux.ServeHTTP(w, r)
	})}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(ln)
	}()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if srv.Shutdown(ctx) != nil {
			_ = srv.Close()
		}
		<-done
	})
	return s
}

// otherOrigin is the server under its other loopback name, the second
// origin tools.html embeds frames from.
func (s *siteServer) otherOrigin() string {
	return strings.Replace(s.URL, "://127.0.0.1:", "://localhost:", 1)
}

// count is how many requests reached path (any method).
func (s *siteServer) count(path string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, p := range s.paths {
		if _, got, _ := strings.Cut(p, " "); got == path {
			n++
		}
	}
	return n
}

func (s *siteServer) total() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.paths)
}

func (s *siteServer) since(n int) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.paths[n:]...)
}

// sinceAt is since for the requests that named host (the server's
// address under one of its names).
func (s *siteServer) sinceAt(n int, host string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for i := n; i < len(s.paths); i++ {
		if s.hosts[i] == host {
			out = append(out, s.paths[i])
		}
	}
	return out
}

// waitCount blocks until at least n requests reached path.
func (s *siteServer) waitCount(t *testing.T, ctx context.Context, path string, n int) {
	t.Helper()
	for {
		s.mu.Lock()
		ch := s.changed
		s.mu.Unlock()
		if s.count(path) >= n {
			return
		}
		select {
		case <-ch:
		case <-ctx.Done():
			s.mu.Lock()
			seen := slices.Clone(s.uris)
			s.mu.Unlock()
			t.Fatalf("%d requests to %s never arrived (saw %d): %v; the server saw:\n%s", n, path, s.count(path), ctx.Err(), strings.Join(seen, "\n"))
		}
	}
}

func siteRandomHex(t *testing.T, n int) string {
	t.Helper()
	b := make([]byte, n)
	if _, err := crand.Read(b); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%x", b)
}

// siteWorld is one mode's Chromium and engine, shared by that mode's
// subtests. Everything the console would write while they run goes to
// places the tests can read back: the engine's and the dispatch's audit to
// a real audit.FileLog file, the browser's (and, in the MCP test, the
// server's) log lines to appLog.
type siteWorld struct {
	mode      webmcp.Mode
	stk       *stacktest.Stack
	eng       *consent.Engine
	br        *browser.Browser
	auditPath string
	audit     *audit.FileLog
	appLog    *logtest.Buffer
	logger    *slog.Logger
}

// launchSiteWorld starts Chromium for mode. The native path is
// browser.Launch as the console runs it (its base flags enable WebMCP); the
// polyfill path adds --disable-features=WebMCP, which Launch merges into
// its one --disable-features flag and which Chromium lets win over the
// enable (the tests check the mode each tab actually got).
func launchSiteWorld(t *testing.T, mode webmcp.Mode) *siteWorld {
	t.Helper()
	fixturetest.NeedChromium(t)
	w := &siteWorld{mode: mode, appLog: &logtest.Buffer{}, auditPath: filepath.Join(t.TempDir(), "audit.jsonl")}
	w.logger = slog.New(slog.NewTextHandler(w.appLog, &slog.HandlerOptions{Level: slog.LevelDebug}))
	var err error
	if w.audit, err = audit.Open(w.auditPath); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.audit.Close() })
	var flags []string
	if mode == webmcp.ModePolyfill {
		flags = []string{"--disable-features=WebMCP"}
	}
	// Generous review and op clocks: the machine may be slow, and every
	// wait here ends on a signal, not on these.
	w.stk = stacktest.Start(t, stacktest.Config{
		Engine:        consent.Config{ReviewTimeout: 3 * time.Minute, OpDeadline: 3 * time.Minute, Audit: w.audit},
		Browser:       browser.Options{Logger: w.logger, ExtraFlags: flags},
		LaunchTimeout: 2 * time.Minute,
	})
	w.eng, w.br = w.stk.Engine, w.stk.Browser
	return w
}

// reviewsShown lists the kinds of the reviews that came on screen for conv.
// It reads the audit file, which the engine writes before it returns from
// the call that showed the review; the event listener runs on its own
// goroutine and may not have caught up yet.
func (w *siteWorld) reviewsShown(conv consent.ConversationID) []consent.ReviewKind {
	recs, err := audit.ReadFile(w.auditPath)
	if err != nil {
		panic(fmt.Sprintf("read the audit log %s: %v", w.auditPath, err))
	}
	var out []consent.ReviewKind
	for _, r := range recs {
		if r.Kind == audit.KindReviewShown && r.Conversation == string(conv) {
			out = append(out, consent.ReviewKind(r.ReviewKind))
		}
	}
	return out
}

// siteRun is one subtest's conversation, Dispatcher and fixture site.
type siteRun struct {
	t    *testing.T
	ctx  context.Context
	w    *siteWorld
	d    *agent.Dispatcher
	conv consent.ConversationID
	srv  *siteServer
	op   *stacktest.Operator
}

func (w *siteWorld) newRun(t *testing.T) *siteRun {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	t.Cleanup(cancel)
	srv := startSiteServer(t) // closes after the conversation's tabs
	c := w.stk.Conversation(t, t.Name(), func(cfg *agent.DispatcherConfig) { cfg.Audit = w.audit })
	return &siteRun{t: t, ctx: ctx, w: w, d: c.Dispatcher, conv: c.ID, srv: srv, op: w.stk.Operator(t, ctx)}
}

func (r *siteRun) start(tool string, args any) *pending {
	r.t.Helper()
	raw := rawArgs(r.t, args)
	c := &pending{t: r.t, ctx: r.ctx, ch: make(chan agent.Result, 1)}
	go func() { c.ch <- r.d.Call(r.ctx, r.conv, tool, raw) }()
	return c
}

// quiet runs a call that must show no review: a review that comes up fails
// the test and is denied so the call ends.
func (r *siteRun) quiet(tool string, args any) agent.Result {
	r.t.Helper()
	changes, stop := r.w.eng.Changes()
	defer stop()
	before := len(r.w.reviewsShown(r.conv))
	c := r.start(tool, args)
	for {
		if f := r.w.eng.Snapshot().Focused; f != nil && f.Conversation == r.conv {
			r.t.Errorf("%s showed a %s review for %s; it must show none", tool, f.Kind, f.Origin)
			r.op.Decide(*f, false)
		}
		select {
		case res := <-c.ch:
			c.res = &res
			if n := len(r.w.reviewsShown(r.conv)); n != before {
				r.t.Errorf("%s showed %d reviews: %v", tool, n-before, r.w.reviewsShown(r.conv)[before:])
			}
			return res
		case <-changes:
		case <-r.ctx.Done():
			r.t.Fatalf("%s did not return: %v", tool, r.ctx.Err())
		}
	}
}

// siteOK decodes a success envelope into v (through its JSON form, as the
// agent receives it).
func siteOK(t *testing.T, res agent.Result, v any) {
	t.Helper()
	if res.IsError {
		t.Fatalf("want success, got %s", res.JSON())
	}
	if err := json.Unmarshal([]byte(res.JSON()), v); err != nil {
		t.Fatalf("decode %s: %v", res.JSON(), err)
	}
}

// siteEnvelope is the design.md §5 failure envelope.
type siteEnvelope struct {
	OK                  bool   `json:"ok"`
	Code                string `json:"code"`
	Error               string `json:"error"`
	Dispatched          bool   `json:"dispatched"`
	MayHaveChangedState bool   `json:"mayHaveChangedState"`
	RetrySafe           bool   `json:"retrySafe"`
	Next                string `json:"next"`
	Trust               string `json:"trust"`
}

func siteFail(t *testing.T, res agent.Result, code errcode.Code, dispatched bool) siteEnvelope {
	t.Helper()
	var e siteEnvelope
	if !res.IsError {
		t.Fatalf("want %s, got success %s", code, res.JSON())
	}
	if err := json.Unmarshal([]byte(res.JSON()), &e); err != nil {
		t.Fatal(err)
	}
	if e.OK || e.Code != string(code) || e.Dispatched != dispatched || e.RetrySafe || e.Trust != agent.TrustUntrusted {
		t.Fatalf("want %s dispatched:%v, got %s", code, dispatched, res.JSON())
	}
	if dispatched && !e.MayHaveChangedState {
		t.Fatalf("a dispatched failure must say mayHaveChangedState: %s", res.JSON())
	}
	return e
}

// siteListing is webmcp_list_tools' result as the agent reads it.
type siteListing struct {
	Tools []struct {
		ToolID      string          `json:"toolId"`
		Name        string          `json:"name"`
		InputSchema json.RawMessage `json:"inputSchema"`
		Origin      string          `json:"origin"`
	} `json:"tools"`
	RejectedTools []struct {
		Name   *string `json:"name"`
		Origin string  `json:"origin"`
		Code   string  `json:"code"`
		Error  string  `json:"error"`
	} `json:"rejectedTools"`
	Support struct {
		Mode string `json:"mode"`
	} `json:"support"`
	Trust string `json:"trust"`
}

func (l *siteListing) id(t *testing.T, name string) string {
	t.Helper()
	for _, tl := range l.Tools {
		if tl.Name == name {
			return tl.ToolID
		}
	}
	t.Fatalf("site tool %s not listed; listed %v", name, l.names())
	return ""
}

// bulkRejected counts the hostile page's bulk tools refused over the quota.
func (l *siteListing) bulkRejected() int {
	n := 0
	for _, rj := range l.RejectedTools {
		if rj.Name != nil && strings.HasPrefix(*rj.Name, "bulk_") && rj.Code == string(errcode.InvalidSiteTool) {
			n++
		}
	}
	return n
}

func (l *siteListing) names() []string {
	var out []string
	for _, tl := range l.Tools {
		out = append(out, tl.Name)
	}
	return out
}

// rejected returns the code of name's rejectedTools entry ("" if none).
func (l *siteListing) rejected(name string) string {
	for _, r := range l.RejectedTools {
		if r.Name != nil && *r.Name == name {
			return r.Code
		}
	}
	return ""
}
