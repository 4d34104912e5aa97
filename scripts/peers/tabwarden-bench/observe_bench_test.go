package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tabwarden/tabwarden/agent/mcpserver"
	"github.com/tabwarden/tabwarden/browser"
	"github.com/tabwarden/tabwarden/browser/browsertest"
	"github.com/tabwarden/tabwarden/consent"
	"github.com/tabwarden/tabwarden/internal/stacktest"
	"github.com/tabwarden/tabwarden/internal/stacktest/servetest"
)

// BenchmarkObserveVsProbe times browser_observe's whole MCP round trip
// (Streamable HTTP with the bearer token, the consent read gate, the
// dispatcher, the observation and its JSON result — what
// scripts/peers/compare.mjs times) next to the in-page limit probe on the
// same tab of the same Chromium, on the /work/shared/bench pages at n = 50,
// 500 and 2,000, and prints per size the two medians and their ratio
// (issue 12 item 7), and observe's own share — each rep's observe minus the
// same rep's browser_tabs, a tool call that does no page work — over the
// probe (issue 24 item 6: own/probe ≤ 1.5), each call's response bytes on
// the wire beside its time.
//
// The in-page limit probe is the least any observation of the page can
// cost: one Runtime.evaluate, from this process over the same CDP
// connection, of the isolated-world script's own observe (world.js, in a
// world of its own named tabwarden-probe), which walks the page, names
// every element and reads the text, and returns what the host does not
// already hold (on an unchanged page, the state and the generations) by
// value. probe-full-ms is the same call asked for everything (every element
// row and the whole text; 5 reps after the loop), for reference,
// mcp-tabs-ms the round trip of browser_tabs, which does no page work: the
// transport's own share, and direct-ms browser_observe through the
// dispatcher with no MCP (the gate, the observation and its JSON result). The MCP call and the probe alternate, swapping
// order each iteration, so machine load falls on both alike.
//
// Needs node (it serves /work/shared/bench/pages.mjs, or $PEER_PAGES) and
// Chromium. Run: go test -run '^$' -bench ObserveVsProbe -benchtime 15x
func BenchmarkObserveVsProbe(b *testing.B) {
	pagesJS := os.Getenv("PEER_PAGES")
	if pagesJS == "" {
		pagesJS = "/work/shared/bench/pages.mjs"
	}
	if _, err := os.Stat(pagesJS); err != nil {
		b.Skipf("no bench pages: %v", err)
	}
	if _, err := exec.LookPath("node"); err != nil {
		b.Skip("no node")
	}
	if _, err := browser.FindChromium(""); err != nil {
		b.Skipf("no Chromium: %v", err)
	}
	world, err := os.ReadFile(filepath.Join("..", "..", "..", "browser", "dom", "world.js"))
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	base := servePages(b, ctx, pagesJS)

	stk := stacktest.Start(b, stacktest.Config{Engine: consent.Config{Profile: consent.ProfileStrict, ReviewDelay: time.Millisecond}})
	eng, br, d := stk.Engine, stk.Browser, stk.Dispatcher(b)
	srv := servetest.Start(b, ctx, stk, d, func(c *mcpserver.Config) {
		c.Listen, c.SessionIdleTimeout, c.Version = "127.0.0.1:0", -1, "bench"
	})
	opCtx, stopOp := context.WithCancel(ctx)
	opDone := make(chan struct{})
	go func() {
		defer close(opDone)
		operate(opCtx, eng, time.Millisecond, newLineWriter(discard{}))
	}()
	defer func() { stopOp(); <-opDone }()

	client := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
	// wire counts the response body bytes the client reads: what the
	// transport carries for each call, printed beside its time.
	wire := &countingTransport{token: srv.DefaultToken().Secret}
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{
		Endpoint: srv.URL, HTTPClient: &http.Client{Transport: wire}, MaxRetries: -1,
	}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer cs.Close()
	// callTool is the timed round trip; parse reads its result afterwards.
	callTool := func(name string, args map[string]any) *mcp.CallToolResult {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			b.Fatalf("%s: %v", name, err)
		}
		return res
	}
	parse := func(name string, res *mcp.CallToolResult) map[string]any {
		var text strings.Builder
		for _, c := range res.Content {
			if t, ok := c.(*mcp.TextContent); ok {
				text.WriteString(t.Text)
			}
		}
		var out map[string]any
		if err := json.Unmarshal([]byte(text.String()), &out); err != nil || res.IsError {
			b.Fatalf("%s: %v %s", name, err, text.String())
		}
		return out
	}
	call := func(name string, args map[string]any) map[string]any { return parse(name, callTool(name, args)) }

	var tabID string
	var conv consent.ConversationID
	var probe *probe
	for _, n := range []int{50, 500, 2000} {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			u := fmt.Sprintf("%s/app?n=%d", base, n)
			if tabID == "" {
				tabID = call("browser_open", map[string]any{"url": u})["tabId"].(string)
				conv = tabConversation(b, eng, consent.TabID(tabID))
			} else {
				call("browser_navigate", map[string]any{"tabId": tabID, "url": u})
			}
			probe = newProbe(b, ctx, br, conv, consent.TabID(tabID), string(world))
			observe := func() *mcp.CallToolResult { return callTool("browser_observe", map[string]any{"tabId": tabID}) }
			// The first observe holds the read review of the origin, the
			// world's install and the document's first look (a short text
			// digest); every later one is the steady state timed below.
			parse("browser_observe", observe())
			first := parse("browser_observe", observe())
			probe.full()
			var mcpT, probeT, fullT, tabsT, ownT, directT []time.Duration
			var obsBytes, tabsBytes []int64
			for i := 0; b.Loop(); i++ {
				var o *mcp.CallToolResult
				timeObserve := func() {
					b0 := wire.read.Load()
					t0 := time.Now()
					o = observe()
					mcpT = append(mcpT, time.Since(t0))
					obsBytes = append(obsBytes, wire.read.Load()-b0)
				}
				timeProbe := func() {
					t0 := time.Now()
					probe.cached()
					probeT = append(probeT, time.Since(t0))
				}
				if i%2 == 0 {
					timeObserve()
					timeProbe()
				} else {
					timeProbe()
					timeObserve()
				}
				b0 := wire.read.Load()
				t0 := time.Now()
				callTool("browser_tabs", map[string]any{})
				tabsT = append(tabsT, time.Since(t0))
				tabsBytes = append(tabsBytes, wire.read.Load()-b0)
				ownT = append(ownT, mcpT[len(mcpT)-1]-tabsT[len(tabsT)-1])
				t0 = time.Now()
				if r := d.Call(ctx, conv, "browser_observe", json.RawMessage(`{"tabId":"`+tabID+`"}`)); r.IsError {
					b.Fatalf("direct observe: %s", r.JSON())
				} else {
					_ = r.JSON()
				}
				directT = append(directT, time.Since(t0))
				if !sameButIDs(parse("browser_observe", o), first) {
					b.Fatalf("observation changed on an unchanged page")
				}
			}
			for range 5 {
				t0 := time.Now()
				probe.full()
				fullT = append(fullT, time.Since(t0))
			}
			b.StopTimer()
			m, p, f, tt, own, dir := median(mcpT), median(probeT), median(fullT), median(tabsT), median(ownT), median(directT)
			b.ReportMetric(m, "mcp-ms")
			b.ReportMetric(p, "probe-ms")
			b.ReportMetric(m/p, "mcp/probe")
			b.ReportMetric(own, "own-ms")
			b.ReportMetric(own/p, "own/probe")
			b.ReportMetric(dir, "direct-ms")
			b.ReportMetric(f, "probe-full-ms")
			b.ReportMetric(tt, "mcp-tabs-ms")
			ob, tb := medianBytes(obsBytes), medianBytes(tabsBytes)
			b.ReportMetric(ob, "observe-B")
			b.ReportMetric(tb, "tabs-B")
			b.ReportMetric(0, "ns/op")
			b.Logf("n=%d: MCP browser_observe %.2f ms (%.0f bytes on the wire), in-page limit probe %.2f ms, observe's own share (observe − browser_tabs, per rep) %.2f ms = %.2f× the probe (target ≤ 1.5); whole round trip %.2f× the probe; probe returning everything %.2f ms; MCP browser_tabs (no page work) %.2f ms (%.0f bytes); the dispatcher called directly (no MCP) %.2f ms; %d reps",
				n, m, ob, p, own, own/p, m/p, f, tt, tb, dir, len(mcpT))
		})
	}
}

// sameButIDs reports whether two observe results differ only in the
// observation id and expiry (every observe mints a new id).
func sameButIDs(a, b map[string]any) bool {
	strip := func(m map[string]any) string {
		s, _ := m["snapshot"].(string)
		if id, _ := m["observationId"].(string); id != "" {
			s = strings.ReplaceAll(s, id, "ID")
		}
		var keep []string
		for _, l := range strings.Split(s, "\n") {
			if !strings.HasPrefix(l, "observation ") && !strings.HasPrefix(l, "viewport ") {
				keep = append(keep, l)
			}
		}
		return strings.Join(keep, "\n")
	}
	return strip(a) == strip(b)
}

func median(ds []time.Duration) float64 {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return float64(s[len(s)/2].Microseconds()) / 1000
}

// probe runs world.js's observe in an isolated world of its own.
type probe struct {
	b     *testing.B
	world *browsertest.World
	token string
	gens  [2]int
}

func newProbe(b *testing.B, ctx context.Context, br *browser.Browser, conv consent.ConversationID, tab consent.TabID, world string) *probe {
	b.Helper()
	w, err := browsertest.NewWorld(ctx, br, conv, tab, "tabwarden-probe")
	if err != nil {
		b.Fatal(err)
	}
	pr := &probe{b: b, world: w}
	pr.eval(world + "\n;true")
	return pr
}

func (p *probe) eval(expr string) string {
	v, err := p.world.Eval(expr)
	if err != nil {
		p.b.Fatal(err)
	}
	return v
}

// full asks for everything and records the generations it was sent.
func (p *probe) full() {
	var r struct {
		State            struct{ Token string }
		ElemGen, TextGen int
		Elements         []json.RawMessage
	}
	s := p.eval(`__tw.observe({maxText: 1048576, token: "", elemGen: 0, textGen: 0})`)
	if err := json.Unmarshal([]byte(s), &r); err != nil || r.Elements == nil {
		p.b.Fatalf("probe: %v %.200s", err, s)
	}
	p.token, p.gens = r.State.Token, [2]int{r.ElemGen, r.TextGen}
}

// cached asks for what changed since full: on an unchanged page, nothing
// but the state.
func (p *probe) cached() {
	s := p.eval(fmt.Sprintf(`__tw.observe({maxText: 1048576, token: %q, elemGen: %d, textGen: %d})`, p.token, p.gens[0], p.gens[1]))
	if !strings.HasPrefix(s, `{"state":`) {
		p.b.Fatalf("probe: %.200s", s)
	}
}

// tabConversation is the conversation that owns tab.
func tabConversation(b *testing.B, eng *consent.Engine, tab consent.TabID) consent.ConversationID {
	b.Helper()
	for _, c := range eng.Snapshot().Conversations {
		for _, t := range c.Tabs {
			if t.ID == tab {
				return c.ID
			}
		}
	}
	b.Fatalf("tab %s has no conversation", tab)
	return ""
}

// servePages runs pages.mjs on 127.0.0.1 and returns its base URL; the
// node process ends with the benchmark.
func servePages(b *testing.B, ctx context.Context, pagesJS string) string {
	b.Helper()
	cmd := exec.CommandContext(ctx, "node", pagesJS, "0")
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		b.Fatal(err)
	}
	u := strings.TrimSpace(line)
	i := strings.Index(u, "/app")
	if i < 0 {
		b.Fatalf("pages.mjs printed %q", u)
	}
	return u[:i]
}

func medianBytes(ns []int64) float64 {
	if len(ns) == 0 {
		return 0
	}
	s := slices.Clone(ns)
	slices.Sort(s)
	return float64(s[len(s)/2])
}

// countingTransport sends the bearer token and counts the response body
// bytes read through it.
type countingTransport struct {
	token string
	read  atomic.Int64
}

func (t *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+t.token)
	res, err := http.DefaultTransport.RoundTrip(r)
	if err == nil {
		res.Body = &countingBody{ReadCloser: res.Body, n: &t.read}
	}
	return res, err
}

type countingBody struct {
	io.ReadCloser
	n *atomic.Int64
}

func (c *countingBody) Read(p []byte) (int, error) {
	n, err := c.ReadCloser.Read(p)
	c.n.Add(int64(n))
	return n, err
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }
