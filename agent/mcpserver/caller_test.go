package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tabwarden/tabwarden/agent"
	"github.com/tabwarden/tabwarden/consent"
	"github.com/tabwarden/tabwarden/consent/audit"
	"github.com/tabwarden/tabwarden/consent/audit/audittest"
	"github.com/tabwarden/tabwarden/consent/errcode"
	"github.com/tabwarden/tabwarden/internal/stacktest"
)

// reviewSurface makes every tool call wait on a navigation review of its
// url argument's origin (default reviewOrigin) in the caller's own tab,
// which it brings on screen, the way browser_open does.
type reviewSurface struct {
	eng *consent.Engine
}

const reviewOrigin = "https://shop.test"

func (s reviewSurface) Call(ctx context.Context, conv consent.ConversationID, tool string, args json.RawMessage) agent.Result {
	tab := consent.TabID("tab-" + string(conv))
	s.eng.PutTab(consent.TabInfo{ID: tab, Conversation: conv, URL: "about:blank"})
	s.eng.Select(conv, tab)
	origin := reviewOrigin
	var a struct {
		URL string `json:"url"`
	}
	if json.Unmarshal(args, &a) == nil && a.URL != "" {
		if u, err := url.Parse(a.URL); err == nil {
			origin = u.Scheme + "://" + u.Host
		}
	}
	if err := s.eng.Ask(ctx, consent.Request{Gate: consent.GateNavigation, Conversation: conv, Tab: tab, Origin: origin}); err != nil {
		ce, _ := err.(*errcode.Error)
		if ce == nil {
			return envelope("browser_operation_failed", err.Error(), false, "list_tabs")
		}
		return envelope(string(ce.Code), ce.Message, false, string(ce.Next))
	}
	return cannedResult(tool, args)
}

// startReviewServer is a server whose every call waits on a review; the
// engine and the server share one audit log, so the review's decision is
// in it.
func startReviewServer(t *testing.T, tune func(*Config)) *testServer {
	t.Helper()
	mem := &audittest.Memory{}
	eng := consent.New(consent.Config{Audit: mem})
	t.Cleanup(eng.Close)
	cfg := Config{Surface: reviewSurface{eng: eng}, Engine: eng, Audit: mem, AuditToolCalls: true, Version: "test"}
	if tune != nil {
		tune(&cfg)
	}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	url, err := s.Start(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return &testServer{Server: s, url: url, secret: s.DefaultToken().Secret, engine: eng, audit: mem}
}

// onScreen waits for a review to be on screen and returns it.
func onScreen(t *testing.T, eng *consent.Engine) consent.Review {
	t.Helper()
	st := stacktest.WaitState(t, eng, "a review on screen", func(st consent.State) bool { return st.Focused != nil })
	return *st.Focused
}

// waitWithdrawn waits for review id to leave the engine and returns its
// decision record, which must say it was withdrawn because of why.
func waitWithdrawn(t *testing.T, ts *testServer, id, why string) audit.Record {
	t.Helper()
	stacktest.WaitState(t, ts.engine, "review "+id+" withdrawn", func(st consent.State) bool {
		for _, r := range st.Queue {
			if r.ID == id {
				return false
			}
		}
		return st.Focused == nil || st.Focused.ID != id
	})
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	rec, err := ts.audit.WaitFor(ctx, func(r audit.Record) bool {
		return r.Kind == audit.KindDecision && r.Review == id
	})
	if err != nil {
		t.Fatal(err)
	}
	if rec.Decision != "canceled" || rec.By != "engine" || !strings.HasPrefix(rec.Note, "withdrawn: ") || !strings.Contains(rec.Note, why) {
		t.Fatalf("decision record %+v, want canceled by the engine, noted withdrawn: …%s…", rec, why)
	}
	return rec
}

// post sends one JSON-RPC message on its own connection under ctx and
// returns the response once the server has answered (or ctx ended).
func post(ctx context.Context, t *testing.T, url string, r rawRequest) (*http.Response, error) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(r.Body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+r.Secret)
	if r.Version != "" {
		req.Header.Set("Mcp-Protocol-Version", r.Version)
		if r.Version == sessionlessVersion {
			var m struct {
				Method string `json:"method"`
				Params struct {
					Name string `json:"name"`
				} `json:"params"`
			}
			if json.Unmarshal(r.Body, &m) == nil {
				req.Header.Set("Mcp-Method", m.Method)
				if m.Params.Name != "" {
					req.Header.Set("Mcp-Name", m.Params.Name)
				}
			}
		}
	}
	if r.Session != "" {
		req.Header.Set("Mcp-Session-Id", r.Session)
	}
	// Its own connection, so closing it is this request's doing alone.
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	return client.Do(req)
}

// openSession initializes a stateful session by hand and returns its id.
func openSession(t *testing.T, ts *testServer) string {
	t.Helper()
	init := rawRequest{Secret: ts.secret, Body: rpcBody(t, "", "initialize", map[string]any{
		"protocolVersion": statefulVersion, "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "raw-client", "version": "1.0"}})}
	status, hdr, body := init.do(t, ts.url)
	id := hdr.Get("Mcp-Session-Id")
	if status != http.StatusOK || id == "" {
		t.Fatalf("initialize: %d %s", status, body)
	}
	resp, err := post(context.Background(), t, ts.url, rawRequest{Secret: ts.secret, Version: statefulVersion, Session: id,
		Body: []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return id
}

func toolCallBody(t *testing.T, version string, id int) []byte {
	t.Helper()
	b := rpcBody(t, version, "tools/call", map[string]any{"name": "browser_open", "arguments": map[string]any{"url": reviewOrigin + "/"}})
	return bytes.Replace(b, []byte(`"id":1`), []byte(`"id":`+strconv.Itoa(id)), 1)
}

// TestGoneCallerWithdrawsReview: a review whose caller is gone is withdrawn
// at once (design.md §4), for each way a caller can go, and the audit says
// which. The review timeout (60 s) is far beyond every wait here, so a
// review that left did so because its caller went.
func TestGoneCallerWithdrawsReview(t *testing.T) {
	cases := []struct {
		name    string
		version string
		why     string
		// leave makes the caller go; cancel ends the call's POST.
		leave func(t *testing.T, ts *testServer, session string, cancel context.CancelFunc)
	}{
		{"stateful POST connection closes", statefulVersion, "the HTTP connection that carried the call closed",
			func(t *testing.T, ts *testServer, session string, cancel context.CancelFunc) { cancel() }},
		{"stateful notifications/cancelled", statefulVersion, "notifications/cancelled",
			func(t *testing.T, ts *testServer, session string, cancel context.CancelFunc) {
				resp, err := post(context.Background(), t, ts.url, rawRequest{Secret: ts.secret, Version: statefulVersion, Session: session,
					Body: []byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7,"reason":"user gave up"}}`)})
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
			}},
		{"stateful session DELETE", statefulVersion, "MCP session closed by the client",
			func(t *testing.T, ts *testServer, session string, cancel context.CancelFunc) {
				req, _ := http.NewRequestWithContext(t.Context(), http.MethodDelete, ts.url, nil)
				req.Header.Set("Authorization", "Bearer "+ts.secret)
				req.Header.Set("Mcp-Session-Id", session)
				req.Header.Set("Mcp-Protocol-Version", statefulVersion)
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
			}},
		{"stateful token revoked", statefulVersion, "agent token default revoked",
			func(t *testing.T, ts *testServer, session string, cancel context.CancelFunc) {
				if err := ts.RevokeToken(DefaultTokenName); err != nil {
					t.Fatal(err)
				}
			}},
		{"sessionless POST connection closes", sessionlessVersion, "its HTTP request ended",
			func(t *testing.T, ts *testServer, session string, cancel context.CancelFunc) { cancel() }},
		{"sessionless token revoked", sessionlessVersion, "agent token default revoked",
			func(t *testing.T, ts *testServer, session string, cancel context.CancelFunc) {
				if err := ts.RevokeToken(DefaultTokenName); err != nil {
					t.Fatal(err)
				}
			}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ts := startReviewServer(t, nil)
			var session string
			if c.version == statefulVersion {
				session = openSession(t, ts)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			answered := make(chan string, 1)
			go func() {
				resp, err := post(ctx, t, ts.url, rawRequest{Secret: ts.secret, Version: c.version, Session: session, Body: toolCallBody(t, c.version, 7)})
				if err != nil {
					answered <- "error: " + err.Error()
					return
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				answered <- string(b)
			}()
			r := onScreen(t, ts.engine)
			c.leave(t, ts, session, cancel)
			waitWithdrawn(t, ts, r.ID, c.why)
			// The operator's a afterwards reaches nothing.
			if err := ts.engine.Decide(r.ID, true); err != consent.ErrNoSuchReview {
				t.Fatalf("a on the withdrawn review: %v, want ErrNoSuchReview", err)
			}
			if st := ts.engine.Snapshot(); st.Focused != nil || len(st.Queue) != 0 {
				t.Fatalf("reviews left after the caller went: %+v", st.Queue)
			}
			cancel()
			if a := <-answered; strings.Contains(a, `"ok":true`) {
				t.Fatalf("the withdrawn call answered ok: %s", a)
			}
		})
	}
}

// A client-sent carrier header is the server's own business: it never
// binds a call to another request (the call still waits for its review).
func TestCarrierHeaderFromClientIgnored(t *testing.T) {
	ts := startReviewServer(t, nil)
	session := openSession(t, ts)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	body := toolCallBody(t, statefulVersion, 3)
	go func() {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, ts.url, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", "Bearer "+ts.secret)
		req.Header.Set("Mcp-Protocol-Version", statefulVersion)
		req.Header.Set("Mcp-Session-Id", session)
		req.Header.Set(carrierHeader, "not-a-carrier")
		if resp, err := http.DefaultClient.Do(req); err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}()
	r := onScreen(t, ts.engine)
	// A spoofed id that names no carrier would read as "carrier gone" and
	// withdraw at once; the review must still be there after the guard.
	time.Sleep(ts.engine.Snapshot().ReviewDelay + 50*time.Millisecond)
	if err := ts.engine.Decide(r.ID, true); err != nil {
		t.Fatalf("the review with a client-sent carrier header was withdrawn: %v", err)
	}
}

// progressLog records the progress notifications a client receives.
type progressLog struct {
	mu    sync.Mutex
	notes []*mcp.ProgressNotificationParams
}

func (p *progressLog) add(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.notes = append(p.notes, req.Params)
}

func (p *progressLog) get() []*mcp.ProgressNotificationParams {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]*mcp.ProgressNotificationParams(nil), p.notes...)
}

func connectProgress(t *testing.T, url, secret, version string, log *progressLog) *mcp.ClientSession {
	t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "progress-client", Version: "1.0"}, &mcp.ClientOptions{ProgressNotificationHandler: log.add})
	tr := &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: stacktest.Bearer{Secret: secret}}, MaxRetries: -1}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cs, err := client.Connect(ctx, tr, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// approveAfter plays the operator: the review on screen is approved hold
// after it appeared.
func approveAfter(t *testing.T, eng *consent.Engine, hold time.Duration) <-chan error {
	t.Helper()
	r := onScreen(t, eng)
	done := make(chan error, 1)
	go func() {
		time.Sleep(time.Until(r.ShownAt.Add(hold)))
		done <- eng.Decide(r.ID, true)
	}()
	return done
}

// TestProgressWhileWaitingOnReview: a client that sends a progressToken
// receives progress every 5 s (the real default interval) during a 20 s
// review, on both transports; the result still arrives.
func TestProgressWhileWaitingOnReview(t *testing.T) {
	const hold = 20 * time.Second
	for _, version := range []string{statefulVersion, sessionlessVersion} {
		t.Run(version, func(t *testing.T) {
			t.Parallel()
			ts := startReviewServer(t, nil) // ProgressInterval zero: the 5 s default
			log := &progressLog{}
			cs := connectProgress(t, ts.url, ts.secret, version, log)
			type answer struct {
				res *mcp.CallToolResult
				err error
			}
			ch := make(chan answer, 1)
			started := time.Now()
			go func() {
				params := &mcp.CallToolParams{Name: "browser_open", Arguments: map[string]any{"url": reviewOrigin + "/"}}
				params.SetProgressToken("tok-" + version)
				res, err := cs.CallTool(context.Background(), params)
				ch <- answer{res, err}
			}()
			decided := approveAfter(t, ts.engine, hold)
			a := <-ch
			elapsed := time.Since(started)
			if err := <-decided; err != nil {
				t.Fatalf("approve: %v", err)
			}
			if a.err != nil || a.res.IsError {
				t.Fatalf("call: %v %+v", a.err, a.res)
			}
			notes := log.get()
			t.Logf("%d progress notifications in %s", len(notes), elapsed.Round(time.Millisecond))
			// Ticks at 5, 10 and 15 s come well before the 20 s approval.
			if len(notes) < 3 {
				t.Fatalf("%d progress notifications during a %s review, want at least 3", len(notes), hold)
			}
			for i, n := range notes {
				if n.ProgressToken != "tok-"+version {
					t.Errorf("notification %d has token %v", i, n.ProgressToken)
				}
				if n.Progress != float64(i+1) {
					t.Errorf("notification %d has progress %v, want %d (increasing)", i, n.Progress, i+1)
				}
				// The 5, 10 and 15 s ticks come while the review waits; one
				// at 20 s may follow the approval, when the call runs on.
				if n.Message != "waiting for the operator's review" && (i < 3 || n.Message != "in progress") {
					t.Errorf("notification %d says %q", i, n.Message)
				}
			}
		})
	}
}

// No progressToken, no progress; the interval is the server's config.
func TestNoProgressWithoutToken(t *testing.T) {
	ts := startReviewServer(t, func(cfg *Config) { cfg.ProgressInterval = 50 * time.Millisecond })
	log := &progressLog{}
	cs := connectProgress(t, ts.url, ts.secret, statefulVersion, log)
	ch := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "browser_open", Arguments: map[string]any{"url": reviewOrigin + "/"}})
		ch <- err
	}()
	decided := approveAfter(t, ts.engine, time.Second)
	if err := <-ch; err != nil {
		t.Fatal(err)
	}
	if err := <-decided; err != nil {
		t.Fatal(err)
	}
	if n := len(log.get()); n != 0 {
		t.Fatalf("%d progress notifications without a progressToken", n)
	}
	// The same call with a token (another origin: the first is granted),
	// at the configured 50 ms, gets many.
	go func() {
		params := &mcp.CallToolParams{Name: "browser_open", Arguments: map[string]any{"url": "https://other.test/"}}
		params.SetProgressToken(42)
		_, err := cs.CallTool(context.Background(), params)
		ch <- err
	}()
	decided = approveAfter(t, ts.engine, time.Second)
	if err := <-ch; err != nil {
		t.Fatal(err)
	}
	if err := <-decided; err != nil {
		t.Fatal(err)
	}
	if n := len(log.get()); n < 5 {
		t.Fatalf("%d progress notifications in a 1 s review at a 50 ms interval, want at least 5", n)
	}
}

// BenchmarkGoneCallerWithdrawal measures how long a review stays on screen
// after the stateful POST that carried its call closes (issue 10: within
// 2 s): from the client's hang-up to the review leaving the engine.
func BenchmarkGoneCallerWithdrawal(b *testing.B) {
	mem := &audittest.Memory{}
	eng := consent.New(consent.Config{Audit: mem})
	defer eng.Close()
	s, err := New(Config{Surface: reviewSurface{eng: eng}, Engine: eng, Version: "test"})
	if err != nil {
		b.Fatal(err)
	}
	url, err := s.Start(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	ts := &testServer{Server: s, url: url, secret: s.DefaultToken().Secret, engine: eng, audit: mem}
	changes, stop := eng.Changes()
	defer stop()
	wait := func(pred func(consent.State) bool) {
		limit := time.After(15 * time.Second)
		for !pred(eng.Snapshot()) {
			select {
			case <-changes:
			case <-limit:
				b.Fatal("timed out")
			}
		}
	}
	var total time.Duration
	for i := 0; b.Loop(); i++ {
		session := openSessionB(b, ts)
		ctx, cancel := context.WithCancel(context.Background())
		go func() {
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(
				[]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"browser_open","arguments":{"url":"https://shop.test/"}}}`)))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			req.Header.Set("Authorization", "Bearer "+ts.secret)
			req.Header.Set("Mcp-Protocol-Version", statefulVersion)
			req.Header.Set("Mcp-Session-Id", session)
			client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
			if resp, err := client.Do(req); err == nil {
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		}()
		wait(func(st consent.State) bool { return st.Focused != nil })
		hangUp := time.Now()
		cancel()
		wait(func(st consent.State) bool { return len(st.Queue) == 0 })
		total += time.Since(hangUp)
	}
	b.ReportMetric(float64(total.Microseconds())/float64(b.N)/1000, "ms/withdrawal")
}

// openSessionB is openSession for a benchmark.
func openSessionB(b *testing.B, ts *testServer) string {
	b.Helper()
	body := []byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"` + statefulVersion +
		`","capabilities":{},"clientInfo":{"name":"bench","version":"1.0"}}}`)
	req, _ := http.NewRequestWithContext(b.Context(), http.MethodPost, ts.url, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+ts.secret)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	id := resp.Header.Get("Mcp-Session-Id")
	if id == "" {
		b.Fatalf("initialize: %d", resp.StatusCode)
	}
	req, _ = http.NewRequestWithContext(b.Context(), http.MethodPost, ts.url, strings.NewReader(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+ts.secret)
	req.Header.Set("Mcp-Protocol-Version", statefulVersion)
	req.Header.Set("Mcp-Session-Id", id)
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	resp.Body.Close()
	return id
}
