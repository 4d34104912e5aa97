package agent_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tabwarden/tabwarden/agent"
	"github.com/tabwarden/tabwarden/agent/mcpserver"
	"github.com/tabwarden/tabwarden/consent"
	"github.com/tabwarden/tabwarden/consent/audit"
	"github.com/tabwarden/tabwarden/consent/errcode"
	"github.com/tabwarden/tabwarden/internal/logtest"
	"github.com/tabwarden/tabwarden/internal/stacktest/servetest"
	"github.com/tabwarden/tabwarden/tui"
	"github.com/tabwarden/tabwarden/webmcp"
)

// TestSiteTools is issue 4's acceptance through the agent dispatch: the
// design.md §10 site-tool steps, the denied disclosure of a secret, the
// hostile page, invalid input and stale handles, each with native WebMCP
// and with the polyfill.
func TestSiteTools(t *testing.T) {
	for _, mode := range []webmcp.Mode{webmcp.ModeNative, webmcp.ModePolyfill} {
		t.Run(string(mode), func(t *testing.T) {
			w := launchSiteWorld(t, mode)
			t.Run("journey", func(t *testing.T) { siteJourney(t, w) })
			t.Run("denied_disclosure_over_mcp", func(t *testing.T) { siteDeniedDisclosure(t, w) })
			t.Run("hostile_page", func(t *testing.T) { siteHostile(t, w) })
			t.Run("invalid_input", func(t *testing.T) { siteInvalidInput(t, w) })
			t.Run("stale_tool_after_navigation", func(t *testing.T) { siteStaleTool(t, w) })
			t.Run("take_over_cancels_running_call", func(t *testing.T) { siteTakeOverCancels(t, w) })
		})
	}
}

// siteToolsFrames is how many frames tools.html embeds; each reports to
// /frame-done once its registration settled.
const siteToolsFrames = 4

// open opens path in a new tab through the navigation review, proving no
// request reached the site before "Allow origin in this tab", and waits for
// that many /frame-done reports (the page's tools are then all registered).
//
// tools.html embeds two frames from the server's other name (localhost for
// 127.0.0.1). A sub-frame document loads only for an origin the tab's
// conversation holds a navigation grant for in that tab (design.md §8,
// docs/decisions.md "Sub-frame documents now answer to navigation
// grants"), so for that page the tab first opens the other origin, through
// its own review, and then navigates to path.
func (r *siteRun) open(path string, frames int) string {
	r.t.Helper()
	first := r.srv.URL + path
	if frames == siteToolsFrames {
		first = r.srv.otherOrigin() + "/"
	}
	c := r.start("browser_open", map[string]any{"url": first})
	rev := r.op.Await(consent.KindNavigation, originOf(first))
	if n := r.srv.total(); n != 0 {
		r.t.Fatalf("%d requests reached the site before navigation consent: %v", n, r.srv.since(0))
	}
	r.op.Decide(rev, true)
	var out struct {
		TabID string `json:"tabId"`
	}
	siteOK(r.t, c.result(), &out)
	if out.TabID == "" {
		r.t.Fatal("browser_open returned no tabId")
	}
	if frames == siteToolsFrames {
		before := r.srv.total()
		nav := r.start("browser_navigate", map[string]any{"tabId": out.TabID, "url": r.srv.URL + path})
		rev := r.op.Await(consent.KindNavigation, r.srv.URL)
		// The other origin's page may still fetch its favicon.
		if got := r.srv.sinceAt(before, strings.TrimPrefix(r.srv.URL, "http://")); len(got) != 0 {
			r.t.Fatalf("requests reached the site before navigation consent: %v", got)
		}
		r.op.Decide(rev, true)
		var navOut struct{}
		siteOK(r.t, nav.result(), &navOut)
	}
	r.srv.waitCount(r.t, r.ctx, "/frame-done", frames)
	return out.TabID
}

// openReviews are the reviews open shows for a page with frames.
func openReviews(frames int) []consent.ReviewKind {
	if frames == siteToolsFrames {
		return []consent.ReviewKind{consent.KindNavigation, consent.KindNavigation}
	}
	return []consent.ReviewKind{consent.KindNavigation}
}

// originOf is the origin of a fixture URL ("http://host:port/path").
func originOf(raw string) string {
	scheme, rest, _ := strings.Cut(raw, "://")
	host, _, _ := strings.Cut(rest, "/")
	return scheme + "://" + host
}

// list runs webmcp_list_tools; the first siteListing on an origin shows the
// read review, later ones none.
func (r *siteRun) list(tab string, read bool) *siteListing {
	r.t.Helper()
	var res agent.Result
	if read {
		c := r.start("webmcp_list_tools", map[string]any{"tabId": tab})
		r.op.Approve(consent.KindRead, r.srv.URL)
		res = c.result()
	} else {
		res = r.quiet("webmcp_list_tools", map[string]any{"tabId": tab})
	}
	l := &siteListing{}
	siteOK(r.t, res, l)
	if l.Support.Mode != string(r.w.mode) {
		r.t.Fatalf("the tab's site tools run in %q mode, want %q", l.Support.Mode, r.w.mode)
	}
	if l.Trust != agent.TrustUntrusted {
		r.t.Fatalf("siteListing trust %q", l.Trust)
	}
	return l
}

func (r *siteRun) observe(tab string) string {
	r.t.Helper()
	var obs struct {
		Snapshot string `json:"snapshot"`
	}
	siteOK(r.t, r.quiet("browser_observe", map[string]any{"tabId": tab}), &obs)
	return obs.Snapshot
}

// siteJourney: open → list → save_draft through "Allow once" and "Share
// result" → observe shows the save.
func siteJourney(t *testing.T, w *siteWorld) {
	r := w.newRun(t)
	tab := r.open("/tools.html", siteToolsFrames)
	l := r.list(tab, true)
	for _, name := range []string{"read_status", "save_draft", "slow_save", "read_session", "frame_same", "frame_delegated"} {
		l.id(t, name)
	}
	for _, name := range []string{"frame_cross", "frame_blocked"} {
		if slices.Contains(l.names(), name) {
			t.Errorf("%s is listed: a cross-origin frame without allow=\"tools\" or under tools=() must not contribute tools", name)
		}
	}
	for _, tl := range l.Tools {
		if strings.Contains(tl.ToolID, tl.Name) || !strings.HasPrefix(tl.ToolID, "wt_") {
			t.Errorf("toolId %q is not opaque", tl.ToolID)
		}
	}

	before := r.srv.total()
	call := r.start("webmcp_call_tool", map[string]any{"tabId": tab, "toolId": l.id(t, "save_draft"), "input": map[string]any{"title": "Quarterly TITLE-VALUE"}})
	allow := r.op.Await(consent.KindToolCall, r.srv.URL)
	// The review is on screen: nothing reached the site, the call waits.
	if got := r.srv.since(before); len(got) != 0 {
		t.Fatalf("requests reached the site before \"Allow once\": %v", got)
	}
	if call.returned() {
		t.Fatalf("the call returned before \"Allow once\": %s", call.result().JSON())
	}
	if allow.ApproveLabel != "Allow once" || allow.ToolCall == nil || allow.ToolCall.ToolName != "save_draft" {
		t.Fatalf("tool-call review %q %+v", allow.ApproveLabel, allow.ToolCall)
	}
	if strings.Contains(allow.ToolCall.InputSummary, "TITLE-VALUE") || !strings.Contains(allow.ToolCall.InputSummary, "title") {
		t.Errorf("input summary %q: want the redacted shape, never the value", allow.ToolCall.InputSummary)
	}
	// The operator sees the values being sent (design.md §4); only the screen does.
	if !strings.Contains(allow.ToolCall.InputValues, `"title": "Quarterly TITLE-VALUE"`) {
		t.Errorf("input values %q: the review must show what is sent", allow.ToolCall.InputValues)
	}
	r.op.Decide(allow, true)

	share := r.op.Await(consent.KindDisclosure, r.srv.URL)
	if n := r.srv.count("/record"); n != 1 {
		t.Fatalf("%d records after \"Allow once\", want exactly 1", n)
	}
	if call.returned() {
		t.Fatalf("the result reached the caller before \"Share result\": %s", call.result().JSON())
	}
	if share.ApproveLabel != "Share result" || share.Disclosure == nil || !strings.Contains(share.Disclosure.Result, `"saved":1`) {
		t.Fatalf("share review %q %+v", share.ApproveLabel, share.Disclosure)
	}
	r.op.Decide(share, true)

	var got struct {
		Outcome string `json:"outcome"`
		Result  struct {
			Saved int    `json:"saved"`
			Title string `json:"title"`
		} `json:"result"`
		Trust string `json:"trust"`
	}
	siteOK(t, call.result(), &got)
	if got.Outcome != "callback_returned_verify_outcome" || got.Result.Saved != 1 || got.Result.Title != "Quarterly TITLE-VALUE" || got.Trust != agent.TrustUntrusted {
		t.Fatalf("call result %+v", got)
	}
	if n := r.srv.count("/record"); n != 1 {
		t.Fatalf("%d records after one call", n)
	}
	if snap := r.observe(tab); !strings.Contains(snap, "Saved 1") {
		t.Fatalf("observe after the save does not show \"Saved 1\":\n%s", snap)
	}
	if kinds := w.reviewsShown(r.conv); !slices.Equal(kinds, append(openReviews(siteToolsFrames), consent.KindRead, consent.KindToolCall, consent.KindDisclosure)) {
		t.Errorf("reviews shown %v", kinds)
	}
	// design.md §9: the audit keeps the input's shape, never its values, and
	// never a site-tool result (the shared result echoes the title).
	raw, err := os.ReadFile(w.auditPath)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(raw), "TITLE-VALUE") || strings.Contains(w.appLog.String(), "TITLE-VALUE") {
		t.Error("the typed input or the site-tool result is in the audit or application log")
	}
}

// siteTakeOverCancels: take-over while a site tool runs cancels it in the
// page (the fixture's toolcancel handler reports /cancelled and never
// records); the call reports an uncertain outcome, never a retry.
func siteTakeOverCancels(t *testing.T, w *siteWorld) {
	r := w.newRun(t)
	tab := r.open("/tools.html", siteToolsFrames)
	l := r.list(tab, true)
	call := r.start("webmcp_call_tool", map[string]any{"tabId": tab, "toolId": l.id(t, "slow_save"), "input": map[string]any{"delayMs": 120000}})
	r.op.Approve(consent.KindToolCall, r.srv.URL)
	r.srv.waitCount(t, r.ctx, "/slow-started", 1)
	if call.returned() {
		t.Fatalf("slow_save returned while running: %s", call.result().JSON())
	}
	if err := w.eng.TakeOver(r.conv); err != nil {
		t.Fatal(err)
	}
	siteFail(t, call.result(), errcode.Paused, true)
	r.srv.waitCount(t, r.ctx, "/cancelled", 1)
	if n := r.srv.count("/record"); n != 0 {
		t.Fatalf("the cancelled call recorded %d times", n)
	}
	if kinds := w.reviewsShown(r.conv); slices.Contains(kinds, consent.KindDisclosure) {
		t.Errorf("a cancelled call asked to share a result: %v", kinds)
	}
}

// siteCapture tees every MCP response body into a buffer, so the test greps
// the bytes on the wire, not only what the SDK client made of them.
type siteCapture struct {
	secret string
	wire   *logtest.Buffer
}

func (c siteCapture) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	req.Header.Set("Authorization", "Bearer "+c.secret)
	res, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	res.Body = siteTeeBody{res.Body, c.wire}
	return res, nil
}

type siteTeeBody struct {
	body interface {
		Read([]byte) (int, error)
		Close() error
	}
	to *logtest.Buffer
}

func (b siteTeeBody) Read(p []byte) (int, error) {
	n, err := b.body.Read(p)
	_, _ = b.to.Write(p[:n])
	return n, err
}
func (b siteTeeBody) Close() error { return b.body.Close() }

// siteMCPCall is a CallTool running while the test plays the operator.
type siteMCPCall struct {
	ch chan *mcp.CallToolResult
}

func siteStartMCPCall(t *testing.T, ctx context.Context, cs *mcp.ClientSession, tool string, args map[string]any) *siteMCPCall {
	c := &siteMCPCall{ch: make(chan *mcp.CallToolResult, 1)}
	go func() {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
		if err != nil {
			t.Errorf("MCP call %s: %v", tool, err)
			res = &mcp.CallToolResult{IsError: true}
		}
		c.ch <- res
	}()
	return c
}

func (c *siteMCPCall) wait(t *testing.T, ctx context.Context) *mcp.CallToolResult {
	t.Helper()
	select {
	case res := <-c.ch:
		return res
	case <-ctx.Done():
		t.Fatalf("MCP call did not return: %v", ctx.Err())
		return nil
	}
}

func (c *siteMCPCall) returned() bool { return len(c.ch) > 0 }

// siteStructured decodes a result's structuredContent into v.
func siteStructured(t *testing.T, res *mcp.CallToolResult, v any) {
	t.Helper()
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("structuredContent %s: %v", b, err)
	}
}

// siteRenderTUI draws the operator's screen for the engine's current state.
func siteRenderTUI(eng *consent.Engine) string {
	m := tui.New(eng, tui.Options{})
	defer m.Close()
	next, _ := m.Update(tea.WindowSizeMsg{Width: 200, Height: 60})
	return ansi.Strip(next.(tui.Model).View().Content)
}

// siteDeniedDisclosure: a session tool's result is denied at "Share result";
// the secret it carried appears in none of the four places the console
// writes to: the MCP response, the audit log, the application log and the
// TUI's activity log. While the share review is up the secret is on the
// operator's screen (the review shows the complete result): that is the
// positive control that the greps below can find it.
func siteDeniedDisclosure(t *testing.T, w *siteWorld) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	srv := startSiteServer(t)
	op := w.stk.Operator(t, ctx)
	// Whatever logs through the process-wide logger lands in appLog too.
	prev := slog.Default()
	slog.SetDefault(w.logger)
	t.Cleanup(func() { slog.SetDefault(prev) })

	d := w.stk.Dispatcher(t, func(c *agent.DispatcherConfig) { c.Audit = w.audit })
	ms := servetest.Start(t, ctx, w.stk, d, func(c *mcpserver.Config) { c.Audit, c.Logger = w.audit, w.logger })
	wire := &logtest.Buffer{}
	client := mcp.NewClient(&mcp.Implementation{Name: "site-e2e", Version: "1.0"}, nil)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{
		Endpoint: ms.URL, HTTPClient: &http.Client{Transport: siteCapture{secret: ms.Secret, wire: wire}}, MaxRetries: -1,
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })

	open := siteStartMCPCall(t, ctx, cs, "browser_open", map[string]any{"url": srv.URL + "/tools.html"})
	nav := op.Await(consent.KindNavigation, srv.URL)
	conv := nav.Conversation
	t.Cleanup(func() { w.stk.CloseTabs(conv) })
	op.Decide(nav, true)
	var opened struct {
		TabID string `json:"tabId"`
	}
	siteStructured(t, open.wait(t, ctx), &opened)
	// This conversation holds no grant for the other origin, so only the
	// page's two same-origin frames load (see siteRun.open).
	srv.waitCount(t, ctx, "/frame-done", siteToolsFrames-2)

	list := siteStartMCPCall(t, ctx, cs, "webmcp_list_tools", map[string]any{"tabId": opened.TabID})
	op.Approve(consent.KindRead, srv.URL)
	l := &siteListing{}
	siteStructured(t, list.wait(t, ctx), l)

	call := siteStartMCPCall(t, ctx, cs, "webmcp_call_tool", map[string]any{"tabId": opened.TabID, "toolId": l.id(t, "read_session")})
	op.Approve(consent.KindToolCall, srv.URL)
	share := op.Await(consent.KindDisclosure, srv.URL)
	if srv.count("/session") != 1 {
		t.Fatalf("the session tool ran %d times, want 1", srv.count("/session"))
	}
	if share.Disclosure == nil || !strings.Contains(share.Disclosure.Result, srv.canary) {
		t.Fatalf("the share review does not show the complete result: %+v", share.Disclosure)
	}
	if screen := siteRenderTUI(w.eng); !strings.Contains(screen, srv.canary) {
		t.Fatalf("positive control: the share review on screen does not show the secret:\n%s", screen)
	}
	if call.returned() || strings.Contains(wire.String(), srv.canary) {
		t.Fatal("the result reached the MCP client before \"Share result\"")
	}
	op.Decide(share, false)

	res := call.wait(t, ctx)
	var env siteEnvelope
	siteStructured(t, res, &env)
	if !res.IsError || env.Code != string(errcode.ResultWithheld) || !env.Dispatched || !env.MayHaveChangedState || env.RetrySafe {
		t.Fatalf("denied share: isError=%v %+v", res.IsError, env)
	}
	// The call is over; no later line may carry the secret either.
	full, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(full), srv.canary) || strings.Contains(wire.String(), srv.canary) {
		t.Errorf("the secret reached the MCP client: %s", full)
	}
	if !strings.Contains(wire.String(), string(errcode.ResultWithheld)) {
		t.Errorf("the wire siteCapture missed the withheld result; the grep above proves nothing")
	}

	raw, err := os.ReadFile(w.auditPath)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(raw), srv.canary) {
		t.Errorf("the secret is in the audit log %s", w.auditPath)
	}
	recs, err := audit.ReadFile(w.auditPath)
	if err != nil {
		t.Fatal(err)
	}
	var denied, withheld bool
	for _, rec := range recs {
		if rec.Conversation != string(conv) {
			continue
		}
		denied = denied || (rec.Kind == audit.KindDecision && rec.ReviewKind == string(consent.KindDisclosure) && rec.Decision == "denied")
		withheld = withheld || (rec.Kind == audit.KindToolCall && rec.Tool == "webmcp_call_tool" && rec.Code == string(errcode.ResultWithheld))
	}
	if !denied || !withheld {
		t.Errorf("audit log lacks the denied share (%v) or the withheld call (%v): the grep read the wrong file", denied, withheld)
	}

	if strings.Contains(w.appLog.String(), srv.canary) {
		t.Errorf("the secret is in the application log")
	}

	st := w.eng.Snapshot()
	if len(st.Activity) == 0 {
		t.Error("the activity log is empty: the grep below proves nothing")
	}
	for _, a := range st.Activity {
		if strings.Contains(a.Text, srv.canary) {
			t.Errorf("the secret is in the activity log: %q", a.Text)
		}
	}
	if screen := siteRenderTUI(w.eng); strings.Contains(screen, srv.canary) {
		t.Errorf("the secret is on the operator's screen after the denial:\n%s", screen)
	}
}

// siteHostile: discovery on the hostile page returns promptly, lists the
// valid tools, rejects each hostile one with its code, shows no review but
// navigation and read, and leaves the tab usable (observe, take-over).
func siteHostile(t *testing.T, w *siteWorld) {
	r := w.newRun(t)
	tab := r.open("/hostile.html", 0)
	r.srv.waitCount(t, r.ctx, "/hostile-ready", 1)

	c := r.start("webmcp_list_tools", map[string]any{"tabId": tab})
	r.op.Approve(consent.KindRead, r.srv.URL)
	began := time.Now()
	res := c.result()
	took := time.Since(began)
	t.Logf("%s: hostile discovery took %v after the read approval", w.mode, took)
	if took > 5*time.Second {
		t.Errorf("hostile discovery took %v, the issue allows 5 s", took)
	}
	l := &siteListing{}
	siteOK(t, res, l)
	// The page's ready request leaves once registerTool has settled for
	// every tool, but in native mode the browser reports registrations as
	// CDP events that can trail it on a busy machine: a listing is a live
	// view of the registry, not a snapshot the page can fence. List again
	// (the read is granted, so quietly) until every registration is seen.
	for l.bulkRejected() < 200-(webmcp.MaxToolsPerFrame-2) && r.ctx.Err() == nil {
		l = &siteListing{}
		siteOK(t, r.quiet("webmcp_list_tools", map[string]any{"tabId": tab}), l)
	}
	listed := l.names()
	for _, name := range []string{"ok_tool", "huge_result"} {
		if !slices.Contains(listed, name) {
			t.Errorf("valid tool %s hidden by hostile ones; listed %v", name, listed)
		}
	}
	if len(listed) != webmcp.MaxToolsPerFrame {
		t.Errorf("listed %d tools, want the frame quota %d", len(listed), webmcp.MaxToolsPerFrame)
	}
	for _, name := range []string{"h_format", "h_pattern", "h_pattern_properties", "h_defs_pattern", "h_defs_format",
		"h_defs_pattern_properties", "h_remote_ref", "h_pointer_ref", "h_schema_65k", "h_depth_33", "h_nodes_5001"} {
		if code := l.rejected(name); code != string(errcode.UnsupportedSchema) {
			t.Errorf("%s: rejected as %q, want unsupported_schema", name, code)
		}
		if slices.Contains(listed, name) {
			t.Errorf("%s is listed", name)
		}
	}
	bulk, nameless := 0, 0
	for _, rj := range l.RejectedTools {
		if rj.Origin != r.srv.URL {
			t.Errorf("rejected entry origin %q", rj.Origin)
		}
		switch {
		case rj.Name == nil && rj.Code == string(errcode.InvalidSiteTool):
			nameless++
		case rj.Name != nil && strings.HasPrefix(*rj.Name, "bulk_") && rj.Code == string(errcode.InvalidSiteTool):
			bulk++
		}
	}
	// 32 per frame: ok_tool and huge_result, then 30 of the 200 bulk tools.
	if want := 200 - (webmcp.MaxToolsPerFrame - 2); bulk != want {
		t.Errorf("%d bulk tools rejected over the quota, want %d", bulk, want)
	}
	// Chromium refuses bad names at registerTool, so only the polyfill's
	// host side sees them, one nameless entry each.
	if w.mode == webmcp.ModePolyfill && nameless != 5 {
		t.Errorf("%d bad-name entries, want 5", nameless)
	}
	if slices.Contains(listed, "hanging_getter") {
		t.Error("a registration whose getter threw was listed")
	}
	if kinds := w.reviewsShown(r.conv); !slices.Equal(kinds, append(openReviews(0), consent.KindRead)) {
		t.Errorf("reviews shown %v, want only navigation and read", kinds)
	}

	// The tab still works: observe, then a take-over that stops a pending
	// site-tool call before it reaches the page, then resume.
	if snap := r.observe(tab); !strings.Contains(snap, "Hostile tools") {
		t.Errorf("observe on the hostile page:\n%s", snap)
	}
	pending := r.start("webmcp_call_tool", map[string]any{"tabId": tab, "toolId": l.id(t, "ok_tool"), "input": map[string]any{}})
	r.op.Await(consent.KindToolCall, r.srv.URL)
	if err := w.eng.TakeOver(r.conv); err != nil {
		t.Fatal(err)
	}
	siteFail(t, pending.result(), errcode.Paused, false)
	if !w.eng.Paused(r.conv) {
		t.Fatal("take-over did not pause the conversation")
	}
	siteFail(t, r.quiet("browser_observe", map[string]any{"tabId": tab}), errcode.Paused, false)
	if err := w.eng.Resume(r.conv); err != nil {
		t.Fatal(err)
	}
	if snap := r.observe(tab); !strings.Contains(snap, "Hostile tools") {
		t.Errorf("observe after resume:\n%s", snap)
	}
}

// siteInvalidInput: input that violates the tool's schema fails
// invalid_input before any review, and nothing reaches the site.
func siteInvalidInput(t *testing.T, w *siteWorld) {
	r := w.newRun(t)
	tab := r.open("/tools.html", siteToolsFrames)
	l := r.list(tab, true)
	before := r.srv.total()
	for _, c := range []struct{ tool, input string }{
		{"save_draft", `{}`},
		{"save_draft", `{"title":""}`},
		{"save_draft", `{"title":5}`},
		{"save_draft", `{"title":"x","extra":1}`},
		{"save_draft", `[]`},
		{"read_status", `{"x":1}`},
		{"slow_save", `{"delayMs":-1}`},
	} {
		res := r.quiet("webmcp_call_tool", `{"tabId":"`+tab+`","toolId":"`+l.id(t, c.tool)+`","input":`+c.input+`}`)
		siteFail(t, res, errcode.InvalidInput, false)
	}
	if got := r.srv.since(before); len(got) != 0 {
		t.Fatalf("invalid input reached the site: %v", got)
	}
	if kinds := w.reviewsShown(r.conv); !slices.Equal(kinds, append(openReviews(siteToolsFrames), consent.KindRead)) {
		t.Errorf("reviews shown %v, want only navigation and read", kinds)
	}
}

// siteStaleTool: a toolId from before a navigation is stale_tool, refused
// before any review; a fresh siteListing mints a new one.
func siteStaleTool(t *testing.T, w *siteWorld) {
	r := w.newRun(t)
	tab := r.open("/tools.html", siteToolsFrames)
	old := r.list(tab, true).id(t, "save_draft")

	// Same origin, same tab: the navigation grant covers it, no review.
	var nav struct {
		Outcome string `json:"outcome"`
	}
	siteOK(t, r.quiet("browser_navigate", map[string]any{"tabId": tab, "url": r.srv.URL + "/tools.html"}), &nav)
	r.srv.waitCount(t, r.ctx, "/frame-done", 2*siteToolsFrames)
	before := r.srv.total()
	input := map[string]any{"title": "after navigation"}
	siteFail(t, r.quiet("webmcp_call_tool", map[string]any{"tabId": tab, "toolId": old, "input": input}), errcode.StaleTool, false)
	if got := r.srv.since(before); len(got) != 0 || r.srv.count("/record") != 0 {
		t.Fatalf("a stale call reached the site: %v", got)
	}
	fresh := r.list(tab, false).id(t, "save_draft")
	if fresh == old {
		t.Fatal("the new document's tool kept the old toolId")
	}
	siteFail(t, r.quiet("webmcp_call_tool", map[string]any{"tabId": tab, "toolId": old, "input": input}), errcode.StaleTool, false)
	if kinds := w.reviewsShown(r.conv); !slices.Equal(kinds, append(openReviews(siteToolsFrames), consent.KindRead)) {
		t.Errorf("reviews shown %v, want only navigation and read", kinds)
	}
}
