package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tabwarden/tabwarden/agent/demo/fixture"
	"github.com/tabwarden/tabwarden/agent/demo/fixture/fixturetest"
	"github.com/tabwarden/tabwarden/agent/mcpserver"
	"github.com/tabwarden/tabwarden/consent/audit"
	"github.com/tabwarden/tabwarden/internal/stacktest"
)

// The real console, shut down by SIGTERM, SIGINT and `q` `y`, with an approved
// act in flight (its click waits on the fixture's /slow, which the fixture
// saw) and two calls waiting on their reviews (one stateful and on screen,
// one sessionless and queued): every client gets a tool result before the console exits —
// the act's says dispatched and mayHaveChangedState, the reviews' say they
// were withdrawn by shutdown — and the audit log's tool-call records say
// the same. Neither waiting open reached the site.
func TestShutdownAnswersEveryCall(t *testing.T) {
	if _, err := exec.LookPath("tmux"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("tmux is not installed; CI installs it (scripts/deps.sh), so this is a broken CI setup")
		}
		t.Skip("tmux is not installed (make deps installs it)")
	}
	fixturetest.NeedChromium(t)
	for _, how := range []string{"SIGTERM", "SIGINT", "q y"} {
		t.Run(strings.ReplaceAll(how, " ", "_"), func(t *testing.T) { shutdownWithCallsInFlight(t, how) })
	}
}

// callResult is one tool call's answer and when it arrived.
type callResult struct {
	res *mcp.CallToolResult
	err error
	at  time.Time
}

func (c callResult) object(t *testing.T, what string) map[string]any {
	t.Helper()
	if c.err != nil {
		t.Fatalf("%s: no tool result, transport error: %v", what, c.err)
	}
	var obj map[string]any
	for _, ct := range c.res.Content {
		if tc, ok := ct.(*mcp.TextContent); ok {
			if err := json.Unmarshal([]byte(tc.Text), &obj); err != nil {
				t.Fatalf("%s: result text %q: %v", what, tc.Text, err)
			}
		}
	}
	if obj == nil {
		t.Fatalf("%s: a result without JSON text: %+v", what, c.res)
	}
	return obj
}

func callAsync(cs *mcp.ClientSession, tool string, args map[string]any) <-chan callResult {
	ch := make(chan callResult, 1)
	go func() {
		// Far beyond the shutdown's 3 s: a client left without an answer
		// shows up as this timeout, not as a pass.
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		defer cancel()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
		ch <- callResult{res: res, err: err, at: time.Now()}
	}()
	return ch
}

func shutdownWithCallsInFlight(t *testing.T, how string) {
	site := fixturetest.Start(t)
	work := t.TempDir()
	auditPath := filepath.Join(work, "audit.jsonl")
	runDir := filepath.Join(work, "run")
	if err := os.Mkdir(runDir, 0o700); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(work, "tmux.sock")
	tm := func(args ...string) error {
		return exec.CommandContext(context.Background(), "tmux", append([]string{"-S", sock, "-f", "/dev/null"}, args...)...).Run()
	}
	t.Cleanup(func() { _ = tm("kill-server") })
	exitFile := filepath.Join(work, "exit")
	cmd := "env HOME=" + work + " XDG_RUNTIME_DIR=" + runDir + " XDG_STATE_HOME=" + work + "/state XDG_DATA_HOME=" + work + "/data " +
		binPath + " --headless --consent trusted --review-delay 250ms --profile " + work + "/profile --audit " + auditPath +
		"; echo $? > " + exitFile
	if err := tm("new-session", "-d", "-s", "tw", "-x", "200", "-y", "60", cmd, ";", "set-option", "-t", "tw", "remain-on-exit", "on"); err != nil {
		t.Fatalf("tmux: %v", err)
	}
	keys := func(k ...string) {
		t.Helper()
		if err := tm(append([]string{"send-keys", "-t", "tw"}, k...)...); err != nil {
			t.Fatalf("send-keys %v: %v", k, err)
		}
	}
	screen := func() string {
		out, _ := exec.CommandContext(t.Context(), "tmux", "-S", sock, "-f", "/dev/null", "capture-pane", "-p", "-J", "-t", "tw").Output()
		return string(out)
	}
	fatal := func(format string, args ...any) {
		t.Helper()
		recs, _ := audit.ReadFile(auditPath)
		log, _ := os.ReadFile(filepath.Join(work, "state", "tabwarden", "tabwarden.log"))
		t.Fatalf(format+"\n----- screen -----\n%s\n----- audit -----\n%+v\n----- log -----\n%s", append(args, screen(), recs, log)...)
	}
	until := func(what string, patience time.Duration, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(patience)
		for !cond() {
			if time.Now().After(deadline) {
				fatal("timed out waiting for %s", what)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	records := func(match func(audit.Record) bool) []audit.Record {
		recs, _ := audit.ReadFile(auditPath)
		var out []audit.Record
		for _, r := range recs {
			if match(r) {
				out = append(out, r)
			}
		}
		return out
	}
	shown := func() int {
		return len(records(func(r audit.Record) bool { return r.Kind == audit.KindReviewShown }))
	}

	var ep mcpserver.Endpoint
	until("the endpoint file", 60*time.Second, func() bool {
		data, err := os.ReadFile(filepath.Join(runDir, "tabwarden", mcpserver.EndpointFile))
		return err == nil && json.Unmarshal(data, &ep) == nil && ep.URL != "" && ep.PID > 0
	})

	// A, stateful: its session review approved, then an act whose click
	// waits on /slow.
	a := stacktest.Connect(t, ep.URL, ep.Token, "2025-11-25", "agent-a")
	opened := callAsync(a, "browser_open", map[string]any{"url": site.URL + "/slow-act.html"})
	until("A's review on screen", 90*time.Second, func() bool { return shown() == 1 })
	// `a` until it counts: the key-ahead guard ignores an early one.
	until("A's review approved", 60*time.Second, func() bool {
		if len(records(func(r audit.Record) bool { return r.Kind == audit.KindDecision && r.Decision == "approved" })) > 0 {
			return true
		}
		time.Sleep(400 * time.Millisecond)
		keys("a")
		return false
	})
	var r callResult
	select {
	case r = <-opened:
	case <-time.After(90 * time.Second):
		fatal("A's open did not finish after a")
	}
	if obj := r.object(t, "A's open"); obj["ok"] != true {
		fatal("A's open: %v", obj)
	}
	// B, stateful, and C, sessionless: each open waits on its review.
	b := stacktest.Connect(t, ep.URL, ep.Token, "2025-11-25", "agent-b")
	bOpen := callAsync(b, "browser_open", map[string]any{"url": site.URL + "/index.html?b"})
	c := stacktest.Connect(t, ep.URL, ep.Token, sessionlessProtocol, "agent-c")
	cOpen := callAsync(c, "browser_open", map[string]any{"url": site.URL + "/index.html?c"})
	until("both reviews queued", 20*time.Second, func() bool { return strings.Contains(screen(), "Review queue (2)") })

	// Observed only now: an observation expires, and the wait above can
	// be long on a loaded machine.
	obs := <-callAsync(a, "browser_observe", map[string]any{})
	o := obs.object(t, "A's observe")
	snapshot, _ := o["snapshot"].(string)
	m := regexp.MustCompile(`(?m)^(e\d+) button "Send slowly"`).FindStringSubmatch(snapshot)
	if m == nil {
		fatal("no Send slowly button in %v", o)
	}

	// The act goes out; its request reaches the site and the click waits.
	acted := callAsync(a, "browser_act", map[string]any{"observationId": o["observationId"], "action": map[string]any{"type": "click", "ref": m[1]}})
	reached := make(chan error, 1)
	go func() {
		_, err := site.WaitFor(testContext(t), func(r fixture.Request) bool { return r.Path == "/slow" })
		reached <- err
	}()
	select {
	case err := <-reached:
		if err != nil {
			fatal("the act's request never reached the site: %v", err)
		}
	case r := <-acted:
		fatal("the act ended before its request reached the site: %v", r.object(t, "A's act"))
	}
	// One of B's and C's reviews is on screen, the other still queued:
	// with A's settled the screen was free, so the first to be asked came
	// up by itself (no review waits unseen); no key is needed.
	until("B's or C's review on screen", 30*time.Second, func() bool { return shown() == 2 })

	stopped := time.Now()
	switch how {
	case "SIGTERM", "SIGINT":
		sig := syscall.SIGTERM
		if how == "SIGINT" {
			sig = syscall.SIGINT
		}
		if err := syscall.Kill(ep.PID, sig); err != nil {
			t.Fatal(err)
		}
	case "q y":
		keys("q")
		until("the quit question", 10*time.Second, func() bool { return strings.Contains(screen(), "y/n") || strings.Contains(screen(), "(y)") })
		stopped = time.Now()
		keys("y")
	}
	results := map[string]callResult{}
	for name, ch := range map[string]<-chan callResult{"A's act": acted, "B's open": bOpen, "C's open": cOpen} {
		select {
		case results[name] = <-ch:
		case <-time.After(30 * time.Second):
			fatal("%s: no answer 30 s after %s", name, how)
		}
	}
	until("the console to exit", 30*time.Second, func() bool {
		code, err := os.ReadFile(exitFile)
		return err == nil && strings.HasSuffix(string(code), "\n")
	})
	exited := time.Now()
	if code, _ := os.ReadFile(exitFile); strings.TrimSpace(string(code)) != "0" {
		fatal("the console exited %q", code)
	}

	for name, r := range results {
		t.Logf("%s answered %v after %s (console exited after %v)", name, r.at.Sub(stopped).Round(time.Millisecond), how, exited.Sub(stopped).Round(time.Millisecond))
	}
	act := results["A's act"].object(t, "A's act")
	if act["code"] != "canceled" || act["dispatched"] != true || act["mayHaveChangedState"] != true ||
		act["next"] != "observe_before_retry" || !strings.Contains(act["error"].(string), "shut down") {
		fatal("A's act after %s: %v, want canceled, dispatched, mayHaveChangedState, naming the shutdown", how, act)
	}
	for _, name := range []string{"B's open", "C's open"} {
		obj := results[name].object(t, name)
		if obj["code"] != "canceled" || obj["dispatched"] != false || obj["mayHaveChangedState"] != false ||
			!strings.Contains(obj["error"].(string), "withdrawn by shutdown") {
			fatal("%s after %s: %v, want canceled, not dispatched, withdrawn by shutdown", name, how, obj)
		}
	}
	if n := site.Count("/index.html"); n != 0 {
		fatal("a withdrawn open reached the site %d times", n)
	}

	calls := func(tool, note string) int {
		return len(records(func(r audit.Record) bool {
			return r.Kind == audit.KindToolCall && r.Tool == tool && r.Code == "canceled" && r.Note == note
		}))
	}
	if n := calls("browser_act", "withdrawn by shutdown after dispatch: may have changed state"); n != 1 {
		fatal("%d audit records of the act withdrawn after dispatch, want 1", n)
	}
	if n := calls("browser_open", "withdrawn by shutdown: nothing dispatched"); n != 2 {
		fatal("%d audit records of opens withdrawn by shutdown, want 2", n)
	}
}

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}
