//go:build tabwarden_probe

package main

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/exp/teatest/v2"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tabwarden/tabwarden/agent/demo/fixture"
	"github.com/tabwarden/tabwarden/browser"
	"github.com/tabwarden/tabwarden/browser/dom"
	"github.com/tabwarden/tabwarden/consent"
	"github.com/tabwarden/tabwarden/internal/stacktest"
	"github.com/tabwarden/tabwarden/tui"
)

// Gate latency (issue 5 acceptance; targets ≤ 50 ms and ≤ 20 ms):
//
//   - arrival → review on screen: from the MCP client sending browser_act to
//     the engine putting the "Allow once" review on screen (EventReviewShown)
//     and to the TUI program's first view that contains it;
//   - key → dispatch: from the `a` key sent to the TUI program to the
//     engine's decision (EventDecision), to the click's first
//     Input.dispatchMouseEvent being sent to Chromium (dom.SetInputProbe:
//     the target, freshness and point re-checks after the decision are
//     included), and to the click's request reaching the fixture server
//     (an upper bound: it includes the click and the page's own fetch).
//
// It needs the input probe, which only a build with the tabwarden_probe
// tag has (the shipped binary carries no benchmark probe):
// Run: go test -tags tabwarden_probe -run '^$' -bench GateLatency -benchtime 30x ./cmd/tabwarden
// Numbers are reported, never asserted.

// viewClock wraps the TUI model and notes when a view first contains needle.
type viewClock struct {
	inner  tea.Model
	needle string
	state  *viewState
}

type viewState struct {
	mu      sync.Mutex
	showing bool
	seen    chan time.Time
}

func (v viewClock) Init() tea.Cmd { return v.inner.Init() }

func (v viewClock) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	m, cmd := v.inner.Update(msg)
	v.inner = m
	return v, cmd
}

func (v viewClock) View() tea.View {
	view := v.inner.View()
	has := strings.Contains(ansi.Strip(view.Content), v.needle)
	v.state.mu.Lock()
	if has && !v.state.showing {
		select {
		case v.state.seen <- time.Now():
		default:
		}
	}
	v.state.showing = has
	v.state.mu.Unlock()
	return view
}

func BenchmarkGateLatency(b *testing.B) {
	if _, err := browser.FindChromium(""); err != nil {
		b.Skipf("no Chromium: %v", err)
	}
	prev := slog.Default()
	slog.SetDefault(slog.New(slog.DiscardHandler))
	defer slog.SetDefault(prev)
	b.Setenv("XDG_RUNTIME_DIR", b.TempDir())
	b.Setenv("HOME", b.TempDir())
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	const delay = 5 * time.Millisecond
	eng := consent.New(consent.Config{ReviewDelay: delay})
	defer eng.Close()
	site, err := fixture.New()
	if err != nil {
		b.Fatal(err)
	}
	defer site.Close()
	agents, err := startAgents(ctx, &options{headless: true, mcpListen: "127.0.0.1:0", profile: b.TempDir() + "/profile"}, eng, nil, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer agents.close()

	// Listeners must never block the engine: sends drop when full, and
	// each round drains what earlier rounds left.
	shown := make(chan time.Time, 64)
	decided := make(chan time.Time, 64)
	defer eng.Listen(func(ev consent.Event) {
		ch := decided
		if ev.Kind == consent.EventReviewShown {
			ch = shown
		} else if ev.Kind != consent.EventDecision {
			return
		}
		select {
		case ch <- time.Now():
		default:
		}
	})()

	// The probe runs on the dispatching goroutine just before the input
	// goes to Chromium; a full channel drops, as the listener above does.
	dispatched := make(chan time.Time, 64)
	defer dom.SetInputProbe(func(string) {
		select {
		case dispatched <- time.Now():
		default:
		}
	})()

	m := tui.New(eng, tui.Options{Version: "bench"})
	defer m.Close()
	vs := &viewState{seen: make(chan time.Time, 1)}
	tm := teatest.NewTestModel(b, viewClock{inner: m, needle: "Allow this action?", state: vs}, teatest.WithInitialTermSize(120, 40))

	cs := stacktest.Connect(b, agents.server.URL(), agents.server.DefaultToken().Secret, sessionlessProtocol, "bench")
	call := func(tool string, args map[string]any) *mcp.CallToolResult {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
		if err != nil {
			b.Fatalf("%s: %v", tool, err)
		}
		return res
	}
	// approveNext answers the next review directly (setup, not measured).
	approveNext := func() <-chan error {
		errc := make(chan error, 1)
		go func() {
			t := <-shown
			<-time.After(time.Until(t.Add(2 * delay)))
			st := eng.Snapshot()
			if st.Focused == nil {
				errc <- errors.New("no review on screen")
				return
			}
			errc <- eng.Decide(st.Focused.ID, true)
			<-decided
		}()
		return errc
	}
	// Setup: open and read, answered directly.
	approved := approveNext()
	res := call("browser_open", map[string]any{"url": site.URL + "/e2e/act.html"})
	if err := <-approved; err != nil || res.IsError {
		b.Fatalf("open: %v", err)
	}
	tab := res.StructuredContent.(map[string]any)["tabId"].(string)
	observe := func() (obs, ref string) {
		r := call("browser_observe", map[string]any{"tabId": tab})
		sc, _ := r.StructuredContent.(map[string]any)
		obs, _ = sc["observationId"].(string)
		snap, _ := sc["snapshot"].(string)
		for _, line := range strings.Split(snap, "\n") {
			if strings.Contains(line, `button "Ping server"`) {
				ref = strings.Fields(line)[0]
			}
		}
		if obs == "" || ref == "" {
			b.Fatalf("observation without the Ping button: %v", sc)
		}
		return obs, ref
	}
	approved = approveNext()
	observe()
	if err := <-approved; err != nil {
		b.Fatalf("read: %v", err)
	}

	var toEngine, toView, keyDecide, keyDispatch, keyServer []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		obs, ref := observe()
		b.StartTimer()
		drain(shown)
		drain(decided)
		drain(dispatched)
		done := make(chan *mcp.CallToolResult, 1)
		t0 := time.Now()
		go func() {
			r, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "browser_act", Arguments: map[string]any{
				"tabId": tab, "observationId": obs, "action": map[string]any{"type": "click", "ref": ref}}})
			if err != nil {
				r = &mcp.CallToolResult{IsError: true}
			}
			done <- r
		}()
		tE := recv(b, shown, "engine review")
		tV := recv(b, vs.seen, "TUI view")
		toEngine = append(toEngine, tE.Sub(t0))
		toView = append(toView, tV.Sub(t0))
		<-time.After(time.Until(tE.Add(2 * delay)))
		before := countQuery(site, "/record", "from=e2e-ping")
		tk := time.Now()
		tm.Send(jPress("a"))
		tD := recv(b, decided, "decision")
		tI := recv(b, dispatched, "input dispatch")
		// WaitFor shows each request once, in order, under the server's
		// lock: count here instead of asking the server again.
		pings := 0
		q, err := site.WaitFor(ctx, func(q fixture.Request) bool {
			if q.Path == "/record" && strings.Contains(q.Query, "from=e2e-ping") {
				pings++
			}
			return pings > before
		})
		if err != nil {
			b.Fatal(err)
		}
		keyDecide = append(keyDecide, tD.Sub(tk))
		keyDispatch = append(keyDispatch, tI.Sub(tk))
		keyServer = append(keyServer, q.Time.Sub(tk))
		if r := <-done; r.IsError {
			b.Fatalf("act failed: %+v", r.Content)
		}
	}
	b.StopTimer()
	for _, s := range []struct {
		name string
		d    []time.Duration
	}{
		{"arrival→engine-review", toEngine}, {"arrival→tui-view", toView},
		{"key→decision", keyDecide}, {"key→dispatch", keyDispatch},
		{"key→server-request", keyServer},
	} {
		p50, p95 := percentile(s.d, 50), percentile(s.d, 95)
		b.ReportMetric(ms(p50), s.name+"-p50-ms")
		b.ReportMetric(ms(p95), s.name+"-p95-ms")
		b.Logf("%-22s p50 %6.2f ms  p95 %6.2f ms  (n=%d)", s.name, ms(p50), ms(p95), len(s.d))
	}
	tm.Send(jPress("q"))
	tm.Send(jPress("y"))
}

// recv bounds a wait so a broken run fails with what it waited for.
func recv(b *testing.B, ch <-chan time.Time, what string) time.Time {
	b.Helper()
	select {
	case t := <-ch:
		return t
	case <-time.After(20 * time.Second):
		b.Fatalf("no %s", what)
		return time.Time{}
	}
}

func drain(ch chan time.Time) {
	for {
		select {
		case <-ch:
		default:
			return
		}
	}
}
