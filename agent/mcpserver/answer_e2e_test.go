package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tabwarden/tabwarden/agent"
	"github.com/tabwarden/tabwarden/agent/demo/fixture"
	"github.com/tabwarden/tabwarden/consent"
	"github.com/tabwarden/tabwarden/consent/errcode"
	"github.com/tabwarden/tabwarden/internal/stacktest"
)

// cutProxy is a TCP proxy in front of the MCP server that drops every
// connection it carries on command: after a number of bytes from the
// server once armed, or at once.
type cutProxy struct {
	ln     net.Listener
	target string

	mu     sync.Mutex
	budget int // bytes server→client still allowed; -1: no limit
	seen   int // bytes server→client since the last arm
	conns  map[net.Conn]net.Conn
}

func startCutProxy(t *testing.T, target string) *cutProxy {
	t.Helper()
	ln, err := (&net.ListenConfig{}).Listen(t.Context(), "tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cutProxy{ln: ln, target: target, budget: -1, conns: map[net.Conn]net.Conn{}}
	var wg sync.WaitGroup
	t.Cleanup(func() {
		ln.Close()
		p.cut()
		wg.Wait()
	})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s, err := (&net.Dialer{Timeout: 10 * time.Second}).DialContext(context.Background(), "tcp4", target)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns[c] = s
			p.mu.Unlock()
			wg.Add(2)
			go func() { defer wg.Done(); _, _ = io.Copy(s, c); s.Close(); c.Close() }()
			go func() { defer wg.Done(); p.down(c, s) }()
		}
	}()
	return p
}

// down copies server→client, honouring the budget.
func (p *cutProxy) down(c, s net.Conn) {
	defer func() {
		c.Close()
		s.Close()
		p.mu.Lock()
		delete(p.conns, c)
		p.mu.Unlock()
	}()
	buf := make([]byte, 32<<10)
	for {
		n, err := s.Read(buf)
		if n > 0 {
			p.mu.Lock()
			allow, stop := n, false
			if p.budget >= 0 {
				allow = min(n, p.budget)
				p.budget -= allow
				stop = p.budget == 0
			}
			p.seen += n
			p.mu.Unlock()
			if _, werr := c.Write(buf[:allow]); werr != nil || stop {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// arm lets n more bytes through from the server (n < 0: all), then cuts.
func (p *cutProxy) arm(n int) {
	p.mu.Lock()
	p.budget, p.seen = n, 0
	p.mu.Unlock()
}

func (p *cutProxy) bytesSeen() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.seen
}

// cut closes every connection now, both sides.
func (p *cutProxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for c, s := range p.conns {
		c.Close()
		s.Close()
	}
}

// viaProxy is a client transport whose connections all go through p; the
// URL (and so the Host header) stays the server's.
func viaProxy(p *cutProxy, secret string) *http.Client {
	tr := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return new(net.Dialer).DialContext(ctx, "tcp4", p.ln.Addr().String())
	}}
	return &http.Client{Transport: stacktest.Bearer{Secret: secret, Base: tr}}
}

// cutCase is one way the batch's answer meets a dropped connection.
type cutCase struct {
	name string
	// bytes >= 0: the proxy lets this many bytes of the answer through,
	// then cuts. Otherwise after runs right after the approval.
	bytes int
	after func(p *cutProxy, cancel context.CancelFunc)
}

func cutAfter(d time.Duration) func(*cutProxy, context.CancelFunc) {
	return func(p *cutProxy, _ context.CancelFunc) { time.Sleep(d); p.cut() }
}

func cancelAfter(d time.Duration) func(*cutProxy, context.CancelFunc) {
	return func(_ *cutProxy, cancel context.CancelFunc) { time.Sleep(d); cancel() }
}

// TestBatchAnswerLostFreezesOrArrives is issue 11's acceptance for the
// lost-batch freeze: a real SDK client (stateful and sessionless) submits
// a plan through a TCP proxy, the operator approves, and the connection
// is dropped at many points after the approval — before, during and after
// the answer is written, by byte count, by time, and by the client's own
// cancel. Every case ends with the client holding the jobId or with its
// conversation frozen job_unknown naming the job; the site (the form's
// GET, one per case) sees the plan's effect at most once; the operator's
// clear (ClearFreeze, the TUI's u) lets the conversation go on.
func TestBatchAnswerLostFreezesOrArrives(t *testing.T) {
	w := newChromiumWorldFor(t, 6*time.Minute)
	u, err := url.Parse(w.url)
	if err != nil {
		t.Fatal(err)
	}
	p := startCutProxy(t, u.Host)

	for _, version := range []string{statefulVersion, sessionlessVersion} {
		// A first, uncut run measures the answer's size on the wire.
		full := w.cutRun(t, p, version, "measure", cutCase{bytes: -1})
		if full < 20 {
			t.Fatalf("%s: the answer took %d bytes on the wire", version, full)
		}
		cases := []cutCase{}
		for _, n := range []int{0, 1, 2, full / 8, full / 4, full / 2, full * 3 / 4, full - 8, full - 2, full - 1, full} {
			cases = append(cases, cutCase{name: fmt.Sprintf("bytes-%d-of-%d", n, full), bytes: n})
		}
		for _, d := range []time.Duration{0, 100 * time.Microsecond, time.Millisecond, 5 * time.Millisecond, 50 * time.Millisecond} {
			cases = append(cases, cutCase{name: "cut-after-" + d.String(), bytes: -1, after: cutAfter(d)})
			cases = append(cases, cutCase{name: "cancel-after-" + d.String(), bytes: -1, after: cancelAfter(d)})
		}
		for i, c := range cases {
			w.cutRun(t, p, version, fmt.Sprintf("%s-%d-%s", version, i, c.name), c)
		}
	}
}

// cutRun runs one case in a conversation of its own and returns the bytes
// the proxy saw from the server after the approval.
func (w *chromiumWorld) cutRun(t *testing.T, p *cutProxy, version, name string, c cutCase) int {
	t.Helper()
	p.arm(-1)
	tok, err := w.srv.MintToken(fmt.Sprintf("cut%d", time.Now().UnixNano()%1e9))
	if err != nil {
		t.Fatal(err)
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "cut-client", Version: "1.0"}, nil)
	dctx, dcancel := context.WithTimeout(w.ctx, 20*time.Second)
	cs, err := client.Connect(dctx, &mcp.StreamableClientTransport{Endpoint: w.url, HTTPClient: viaProxy(p, tok.Secret)},
		&mcp.ClientSessionOptions{ProtocolVersion: version})
	dcancel()
	if err != nil {
		t.Fatalf("%s: connect: %v", name, err)
	}
	defer cs.Close()
	session := cs.ID()
	tab := w.openBatchPage(t, cs)
	snap := w.call(t, cs, "browser_tabs", nil) // an unreviewed call first: the conversation exists
	_ = snap
	obj := w.reviewed(t, cs, consent.KindRead, "browser_observe", map[string]any{"tabId": tab})
	text, _ := obj["snapshot"].(string)
	// One click: the form's GET is the plan's one effect. (Fills scroll the
	// page now and then, which stops a job before its click; this test is
	// about the answer, not the steps.)
	steps := []map[string]any{{"action": map[string]any{"type": "click", "ref": refIn(t, text, "button", "Send")}}}
	before := countPath(w.site, "/record", "from=batch")
	effects := func() int { return countPath(w.site, "/record", "from=batch") - before }
	// landed waits for the done job's one effect to reach the site (the
	// click's navigation lands after the step reports), and counts.
	landed := func() int {
		ctx, cancel := context.WithTimeout(w.ctx, 5*time.Second)
		defer cancel()
		n := 0
		_, _ = w.site.WaitFor(ctx, func(r fixture.Request) bool {
			if r.Path == "/record" && strings.Contains(r.Query, "from=batch") {
				n++
			}
			return n > before
		})
		return effects()
	}

	callCtx, cancel := context.WithTimeout(w.ctx, 15*time.Second)
	defer cancel()
	type answer struct {
		res *mcp.CallToolResult
		err error
	}
	ch := make(chan answer, 1)
	go func() {
		res, err := cs.CallTool(callCtx, &mcp.CallToolParams{Name: "browser_batch", Arguments: map[string]any{"tabId": tab, "steps": steps}})
		ch <- answer{res, err}
	}()
	w.approveWith(t, consent.KindPlan, func() { p.arm(c.bytes) })
	if c.after != nil {
		c.after(p, cancel)
	}
	a := <-ch
	seen := p.bytesSeen()
	p.arm(-1)

	held := ""
	if a.err == nil {
		if o, _ := a.res.StructuredContent.(map[string]any); o != nil && o["ok"] == true {
			held, _ = o["jobId"].(string)
		}
	}
	// The client comes back in the same conversation: its session id
	// (stateful) or its token (sessionless), straight to the server.
	raw := func(tool string, args map[string]any) map[string]any {
		body := rpcBody(t, version, "tools/call", map[string]any{"name": tool, "arguments": args})
		status, _, b := rawRequest{Secret: tok.Secret, Version: version, Session: session, Body: body}.do(t, w.url)
		var m struct {
			Result struct {
				StructuredContent map[string]any `json:"structuredContent"`
			} `json:"result"`
		}
		if status == http.StatusNotFound && session != "" {
			return nil // the session ended
		}
		if status != http.StatusOK || json.Unmarshal(b, &m) != nil || m.Result.StructuredContent == nil {
			t.Fatalf("%s: %s after the cut: HTTP %d %s", name, tool, status, b)
		}
		return m.Result.StructuredContent
	}
	jobEnd := func(id string) map[string]any {
		for {
			j := raw("browser_job", map[string]any{"jobId": id})
			if j["ok"] != true {
				t.Fatalf("%s: browser_job %s: %v", name, id, j)
			}
			if j["status"] != agent.JobRunning {
				return j
			}
			select {
			case <-time.After(20 * time.Millisecond):
			case <-w.ctx.Done():
				t.Fatalf("%s: job %s never ended", name, id)
			}
		}
	}
	// An ordinary call that reaches the freeze check and answers without a
	// review: an act on an observation that does not exist.
	ordinary := func() map[string]any {
		for {
			r := raw("browser_act", map[string]any{"tabId": tab, "observationId": "obs-none", "action": map[string]any{"type": "key", "key": "Tab"}})
			if r["code"] != string(errcode.JobPending) {
				return r
			}
			// Running: wait for it to end, as a client that does not read
			// the job_pending message would, to reach the freeze.
			select {
			case <-time.After(20 * time.Millisecond):
			case <-w.ctx.Done():
				t.Fatalf("%s: job_pending for ever", name)
			}
		}
	}

	// Frozen by the transport's own word (answer.go), before any next call?
	atOnce := false
	for _, cv := range w.eng.Snapshot().Conversations {
		for _, tb := range cv.Tabs {
			if string(tb.ID) == tab && cv.Frozen != nil {
				atOnce = true
			}
		}
	}
	if raw("browser_tabs", nil) == nil {
		// The stateful client gave up on its session (DELETE): the
		// conversation ended, its job stopped and its tab went to the
		// operator; nobody is left to freeze, nothing can resubmit there.
		for _, cv := range w.eng.Snapshot().Conversations {
			if len(cv.Tabs) > 0 && string(cv.Tabs[0].ID) == tab {
				t.Errorf("%s: the session is gone but its conversation still holds tab %s", name, tab)
			}
		}
		if n := effects(); n > 1 {
			t.Errorf("%s: the plan's effect reached the site %d times", name, n)
		}
		t.Logf("%s: session ended; held=%v bytes=%d", name, held != "", seen)
		return seen
	}
	if held != "" {
		// The client polls its job as told, then goes on.
		if j := jobEnd(held); j["status"] != agent.JobDone {
			t.Errorf("%s: job %s ended %v", name, held, j)
		}
		if r := ordinary(); r["code"] == string(errcode.JobUnknown) {
			// Allowed (the server saw the connection go as the answer
			// left), but it must name the job and clear.
			if !strings.Contains(fmt.Sprint(r["error"]), held) {
				t.Errorf("%s: job_unknown %v does not name %s", name, r["error"], held)
			}
			w.clearFrozen(t, name, held)
		}
		if n := landed(); n != 1 {
			t.Errorf("%s: the site saw the plan's effect %d times, want 1", name, n)
		}
	} else {
		r := ordinary()
		if r["code"] == string(errcode.JobUnknown) {
			msg := fmt.Sprint(r["error"])
			i := strings.Index(msg, "job-")
			if i < 0 {
				t.Fatalf("%s: job_unknown names no job: %q", name, msg)
			}
			id := strings.TrimRight(strings.Fields(msg[i:])[0], ".,;:)\"'")
			// browser_job stays open while frozen.
			if j := jobEnd(id); j["status"] != agent.JobDone {
				t.Errorf("%s: frozen job %s ended %v", name, id, j)
			}
			if n := landed(); n != 1 {
				t.Errorf("%s: frozen job %s: the site saw its effect %d times, want 1", name, id, n)
			}
			// The naive client resubmits its plan: refused, unreviewed.
			if again := raw("browser_batch", map[string]any{"tabId": tab, "steps": steps}); again["code"] != string(errcode.JobUnknown) {
				t.Errorf("%s: resubmit while frozen = %v, want job_unknown again", name, again)
			}
			w.clearFrozen(t, name, id)
		} else if n := effects(); n != 0 {
			t.Errorf("%s: the client never got the jobId, its conversation is not frozen (%v), yet the site saw the plan's effect %d times", name, r, n)
		}
		if c.bytes < 0 && c.after == nil {
			t.Fatalf("%s: the uncut run got no jobId: %v %v", name, a.err, a.res)
		}
	}
	// Cleared or never frozen, the conversation goes on.
	if r := ordinary(); r["code"] == string(errcode.JobUnknown) {
		t.Errorf("%s: still frozen after the clear: %v", name, r)
	}
	if n := effects(); n > 1 {
		t.Errorf("%s: the plan's effect reached the site %d times", name, n)
	}
	t.Logf("%s: held=%v frozen-at-once=%v bytes=%d", name, held != "", atOnce, seen)
	return seen
}

// clearFrozen plays the operator's u on the conversation frozen for job.
func (w *chromiumWorld) clearFrozen(t *testing.T, name, job string) {
	t.Helper()
	for _, c := range w.eng.Snapshot().Conversations {
		if c.Frozen != nil && c.Frozen.Job == job {
			if err := w.eng.ClearFreeze(c.ID); err != nil {
				t.Fatalf("%s: clear: %v", name, err)
			}
			return
		}
	}
	t.Fatalf("%s: job_unknown for %s but the console shows no conversation frozen for it", name, job)
}

// openBatchPage opens /e2e/batch.html in a new tab of cs.
func (w *chromiumWorld) openBatchPage(t *testing.T, cs *mcp.ClientSession) string {
	t.Helper()
	obj := w.reviewed(t, cs, consent.KindNavigation, "browser_open", map[string]any{"url": w.site.URL + "/e2e/batch.html"})
	tab, _ := obj["tabId"].(string)
	if tab == "" {
		t.Fatalf("open returned no tabId: %v", obj)
	}
	return tab
}

// approveWith approves the next review of kind for the site, running
// before just before the decision.
func (w *chromiumWorld) approveWith(t *testing.T, kind consent.ReviewKind, before func()) {
	t.Helper()
	w.stk.Operator(t, w.ctx).SelectingQueued().BeforeKey(before).Approve(kind, w.site.URL)
}

// refIn finds the ref of the element role "name" in an observation snapshot.
func refIn(t *testing.T, snap, role, name string) string {
	t.Helper()
	for _, line := range strings.Split(snap, "\n") {
		if strings.Contains(line, role+` "`+name+`"`) {
			return strings.Fields(line)[0]
		}
	}
	t.Fatalf("no %s %q in %s", role, name, snap)
	return ""
}
