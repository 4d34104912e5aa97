package main

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/exp/teatest/v2"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tabwarden/tabwarden/agent"
	"github.com/tabwarden/tabwarden/agent/demo"
	"github.com/tabwarden/tabwarden/agent/demo/fixture"
	"github.com/tabwarden/tabwarden/agent/demo/fixture/fixturetest"
	"github.com/tabwarden/tabwarden/agent/mcpserver"
	"github.com/tabwarden/tabwarden/consent"
	"github.com/tabwarden/tabwarden/consent/audit"
	"github.com/tabwarden/tabwarden/consent/audit/audittest"
	"github.com/tabwarden/tabwarden/internal/logtest"
	"github.com/tabwarden/tabwarden/internal/stacktest"
	"github.com/tabwarden/tabwarden/tui"
)

// The reference journey (design.md §10) end to end: the demo agent's script
// runs through a real MCP client (the Go SDK, over HTTP, bearer token) to
// the console's MCP server, dispatch and a real headless Chromium, while
// every decision is a key pressed in the real TUI program. The fixture
// servers are the witnesses: each gate is checked by what they had seen
// when the review came on screen, not by what the tools returned.

// journeyDelay is the key-ahead guard here: short, but the operator
// still waits it out before each `a`, as a person would.
const journeyDelay = 40 * time.Millisecond

// sessionlessProtocol is MCP 2026-07-28: the conversation is the token.
const sessionlessProtocol = "2026-07-28"

// mcpSurface is an agent.Surface over an MCP client session: the demo
// agent's calls travel the wire like any host's. conv is ignored, as the
// server takes identity from the token.
type mcpSurface struct{ cs *mcp.ClientSession }

func (s mcpSurface) Call(ctx context.Context, _ consent.ConversationID, tool string, args json.RawMessage) agent.Result {
	var a any
	if len(args) > 0 {
		a = args
	}
	res, err := s.cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: a})
	if err != nil {
		return agent.Result{IsError: true, Object: map[string]any{"ok": false, "code": "transport_error", "error": err.Error()}}
	}
	out := agent.Result{IsError: res.IsError}
	for _, c := range res.Content {
		switch c := c.(type) {
		case *mcp.TextContent:
			if out.Object == nil {
				_ = json.Unmarshal([]byte(c.Text), &out.Object)
			}
		case *mcp.ImageContent:
			out.Image = c.Data
		}
	}
	if out.Object == nil {
		out.Object = map[string]any{"ok": false, "code": "unreadable_result"}
	}
	return out
}

// jRig is the console under test.
type jRig struct {
	t     *testing.T
	ctx   context.Context
	eng   *consent.Engine
	world *demoWorld
	tm    *teatest.TestModel
	// screen is what the console last drew (see jWatched).
	screen *jScreen
	log    *audittest.Memory
}

func startJourneyRig(t *testing.T) *jRig {
	t.Helper()
	return startJourneyRigWith(t, consent.ProfileStrict)
}

// startJourneyRigWith is the console under test with its engine on the
// given consent profile (--consent).
func startJourneyRigWith(t *testing.T, profile consent.Profile) *jRig {
	t.Helper()
	return startJourneyRigTUI(t, profile, nil)
}

// startJourneyRigTUI is startJourneyRigWith where more, when set, adds to
// the TUI's options once the engine and the world are up.
func startJourneyRigTUI(t *testing.T, profile consent.Profile, more func(*jRig, *tui.Options)) *jRig {
	t.Helper()
	fixturetest.NeedChromium(t)
	t.Setenv("XDG_RUNTIME_DIR", t.TempDir()) // the endpoint file
	t.Setenv("HOME", t.TempDir())            // and its HOME copy
	// The console's components log to slog's default; a test's output
	// should show the journey, not transport chatter, unless it failed.
	prev := slog.Default()
	logs := &logtest.Buffer{} // the console's log, for a failed journey's report
	slog.SetDefault(slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	t.Cleanup(func() { slog.SetDefault(prev) })
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	mem := &audittest.Memory{}
	eng := consent.New(consent.Config{Profile: profile, ReviewDelay: journeyDelay, Audit: mem})
	if eng.Profile() != profile {
		t.Fatalf("the engine runs profile %q, want %q", eng.Profile(), profile)
	}
	t.Cleanup(eng.Close)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("console log:\n%s", logs.String())
			for _, a := range eng.Snapshot().Activity {
				t.Logf("activity %s %s: %s", a.Time.Format("15:04:05.000"), a.Conversation, a.Text)
			}
			for _, c := range eng.Snapshot().Conversations {
				for _, tab := range c.Tabs {
					t.Logf("tab %s of %s: %s loading=%v opener=%s status=%s", tab.ID, c.ID, tab.URL, tab.Loading, tab.OpenerTabID, tab.Status)
				}
			}
		}
	})
	w, err := startDemoWorld(ctx, &options{consent: string(profile), headless: true, mcpListen: "127.0.0.1:0", reviewDelay: journeyDelay}, eng, mem)
	if err != nil {
		t.Fatalf("start the demo world: %v", err)
	}
	t.Cleanup(w.close)
	t.Cleanup(func() {
		if t.Failed() {
			for _, q := range w.site.Requests() {
				t.Logf("site saw %s %s %s?%s", q.Time.Format("15:04:05.000"), q.Method, q.Path, q.Query)
			}
		}
	})
	r := &jRig{t: t, ctx: ctx, eng: eng, world: w, log: mem}
	opts := tui.Options{Version: "journey", Minter: w.agents}
	if more != nil {
		more(r, &opts)
	}
	m := tui.New(eng, opts)
	t.Cleanup(m.Close)
	r.screen = &jScreen{changed: make(chan struct{})}
	r.tm = teatest.NewTestModel(t, jWatched{inner: m, screen: r.screen}, teatest.WithInitialTermSize(120, 40))
	return r
}

// jWatched is the console's model with its last drawn screen kept aside, so
// a test presses a key only once the screen shows what the key acts on, as
// a person would (the engine's state can be ahead of the screen).
type jWatched struct {
	inner  tea.Model
	screen *jScreen
}

type jScreen struct {
	mu      sync.Mutex
	text    string
	changed chan struct{} // closed and replaced on each new screen
}

func (w jWatched) Init() tea.Cmd { return w.inner.Init() }

func (w jWatched) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	m, cmd := w.inner.Update(msg)
	w.inner = m
	return w, cmd
}

func (w jWatched) View() tea.View {
	v := w.inner.View()
	text := ansi.Strip(v.Content)
	w.screen.mu.Lock()
	if text != w.screen.text {
		w.screen.text = text
		close(w.screen.changed)
		w.screen.changed = make(chan struct{})
	}
	w.screen.mu.Unlock()
	return v
}

// waitScreen waits until the drawn screen satisfies pred.
func (r *jRig) waitScreen(patience time.Duration, pred func(screen string) bool) bool {
	give := time.After(patience)
	for {
		r.screen.mu.Lock()
		text, ch := r.screen.text, r.screen.changed
		r.screen.mu.Unlock()
		if pred(text) {
			return true
		}
		select {
		case <-ch:
		case <-give:
			return false
		}
	}
}

func jPress(s string) tea.KeyPressMsg {
	switch s {
	case "tab":
		return tea.KeyPressMsg{Code: tea.KeyTab}
	case "down":
		return tea.KeyPressMsg{Code: tea.KeyDown}
	}
	return tea.KeyPressMsg{Code: []rune(s)[0], Text: s}
}

// conversationOf finds the conversation the server created for a client:
// the one that was not there before.
func (r *jRig) newConversation(before map[consent.ConversationID]bool) consent.ConversationID {
	for _, c := range r.eng.Snapshot().Conversations {
		if !before[c.ID] {
			return c.ID
		}
	}
	r.t.Fatal("the MCP call created no conversation")
	return ""
}

func (r *jRig) convSet() map[consent.ConversationID]bool {
	m := map[consent.ConversationID]bool{}
	for _, c := range r.eng.Snapshot().Conversations {
		m[c.ID] = true
	}
	return m
}

func TestJourneyOverMCPWithTUIKeys(t *testing.T) {
	r := startJourneyRig(t)
	w := r.world
	site, second := w.site, w.second

	// The agent connects with the console's default token, a visitor with
	// a token of its own, and the policy run's agent to its own browser's
	// endpoint; the operator answers every review with keys.
	op, _ := walkJourney(t, r, nil)

	// Witnesses at the end of the journey.
	if n := countReq(site, "POST", "/signin"); n != 1 {
		t.Errorf("sign-ins = %d, want 1", n)
	}
	if n := saveRecords(site); n != 1 {
		t.Errorf("save_draft records = %d, want 1", n)
	}
	if n := second.Total(); n != 0 {
		t.Errorf("the never-approved origin saw %d requests", n)
	}
	for _, kind := range []string{"kind=post", "kind=put", "kind=beacon"} {
		if n := countQuery(site, "/record", kind); n != 0 {
			t.Errorf("policy run: %s reached the server %d times", kind, n)
		}
	}
	want := map[consent.ReviewKind]int{
		consent.KindNavigation: 5, // open, tools page after resume, popup, redirect hop (denied), policy-run open
		consent.KindToolCall:   1,
		consent.KindDisclosure: 1,
		consent.KindAction:     1,
	}
	for kind, n := range want {
		if got := op.count[kind]; got != n {
			t.Errorf("%s reviews answered = %d, want %d", kind, got, n)
		}
	}
	if op.count[consent.KindRead] < 1 {
		t.Errorf("no read review was answered")
	}
	for _, code := range []string{"sign_in_required", "stale_observation", "wrong_conversation", "website_blocked", "tab_closed", "user_denied"} {
		if !r.auditHasCode(code) {
			t.Errorf("no tool call ended with %s", code)
		}
	}

	r.tm.Send(jPress("q"))
	teatest.WaitFor(t, r.tm.Output(), func(b []byte) bool { return strings.Contains(string(b), "(y/n)") }, teatest.WithDuration(5*time.Second))
	r.tm.Send(jPress("y"))
	r.tm.WaitFinished(t, teatest.WithFinalTimeout(10*time.Second))
}

// journeyConvs are the conversations the MCP server created for the walk.
type journeyConvs struct {
	agent, policy consent.ConversationID
}

// walkJourney connects the journey's three MCP clients (the agent, a
// visitor with its own token, the policy run's agent), runs the demo
// script through them and answers the reviews with the operator whose
// judge judgeFor builds (nil: the strict operator's own checks). It
// returns when the script has run to its end.
func walkJourney(t *testing.T, r *jRig, judgeFor func(journeyConvs) func(consent.Review) bool) (*jOperator, journeyConvs) {
	t.Helper()
	w := r.world
	before := r.convSet()
	cs := stacktest.Connect(t, w.agents.server.URL(), w.agents.server.DefaultToken().Secret, sessionlessProtocol, "journey-agent")
	if res := (mcpSurface{cs}).Call(r.ctx, "", "browser_tabs", nil); res.IsError {
		t.Fatalf("browser_tabs: %s", res.JSON())
	}
	var convs journeyConvs
	convs.agent = r.newConversation(before)

	tok, err := w.agents.server.MintToken("visitor")
	if err != nil {
		t.Fatal(err)
	}
	visitor := stacktest.Connect(t, w.agents.server.URL(), tok.Secret, sessionlessProtocol, "journey-visitor")

	psrv, err := mcpserver.New(mcpserver.Config{Surface: w.policyDispatch, Engine: r.eng, Listen: "127.0.0.1:0", Version: "journey"})
	if err != nil {
		t.Fatal(err)
	}
	purl, err := psrv.Start(r.ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(psrv.Close)
	before = r.convSet()
	pcs := stacktest.Connect(t, purl, psrv.DefaultToken().Secret, sessionlessProtocol, "journey-policy")
	if res := (mcpSurface{pcs}).Call(r.ctx, "", "browser_tabs", nil); res.IsError {
		t.Fatalf("browser_tabs: %s", res.JSON())
	}
	convs.policy = r.newConversation(before)

	cfg := demo.Config{
		Surface: mcpSurface{cs}, Conv: convs.agent, Engine: r.eng, Site: w.site, Second: w.second,
		Visitor: mcpSurface{visitor}, PolicySurface: mcpSurface{pcs}, PolicyConv: convs.policy,
		CloseTab: w.agents.browser.CloseTab,
	}
	done := make(chan error, 1)
	go func() { done <- demo.New(cfg).Run(r.ctx, demo.Journey()) }()

	op := &jOperator{rig: r, conv: convs.agent, site: w.site, second: w.second, handled: map[string]bool{}}
	if judgeFor != nil {
		op.judge = judgeFor(convs)
	}
	if err := op.run(done); err != nil {
		t.Fatalf("the journey failed: %v", err)
	}
	return op, convs
}

func (r *jRig) auditHasCode(code string) bool {
	for _, rec := range r.log.Records() {
		if rec.Kind == audit.KindToolCall && rec.Code == code {
			return true
		}
	}
	return false
}

// jOperator is the person at the keyboard: it watches the engine, checks
// the witnesses when each review is on screen, and answers with keys sent
// to the TUI program. It signs in by hand (CDP on the page) during the
// take-over and presses r.
type jOperator struct {
	rig          *jRig
	conv         consent.ConversationID
	site, second *fixture.Server

	// judge, when set, replaces the strict journey's checks: it checks the
	// witnesses while rev is on screen and says whether to approve it.
	judge func(rev consent.Review) (approve bool)

	handled  map[string]bool
	count    map[consent.ReviewKind]int
	signedIn bool
}

func (o *jOperator) run(done <-chan error) error {
	r := o.rig
	o.count = map[consent.ReviewKind]int{}
	changes, stop := r.eng.Changes()
	defer stop()
	for {
		st := r.eng.Snapshot()
		switch {
		case st.Focused != nil && !o.handled[st.Focused.ID]:
			o.handled[st.Focused.ID] = true
			o.answer(*st.Focused)
			continue
		case o.waiting(st) != nil:
			o.bringToFront(*o.waiting(st))
			continue
		case r.eng.Paused(o.conv) && !o.signedIn:
			o.signIn()
			o.signedIn = true
			o.key("r")
			continue
		}
		select {
		case <-changes:
		case err := <-done:
			return err
		case <-r.ctx.Done():
			r.t.Fatalf("the journey did not finish: %v; queue %+v", r.ctx.Err(), st.Queue)
		}
	}
}

func (o *jOperator) key(k string) { o.rig.tm.Send(jPress(k)) }

// waiting is a pending review not on screen because its tab is not the
// selected one ("needs attention").
func (o *jOperator) waiting(st consent.State) *consent.Review {
	for _, q := range st.Queue {
		if !o.handled[q.ID] && (st.Focused == nil || st.Focused.ID != q.ID) {
			return &q
		}
	}
	return nil
}

// bringToFront selects the review's tab the way the operator would: tab to
// its conversation, then ↓ to its tab.
func (o *jOperator) bringToFront(q consent.Review) {
	r := o.rig
	for i := 0; i < 40; i++ {
		st := r.eng.Snapshot()
		if st.Focused != nil && st.Focused.ID == q.ID {
			return
		}
		if !inQueue(st, q.ID) {
			return
		}
		if st.Selection.Conversation != q.Conversation {
			o.key("tab")
		} else {
			o.key("down")
		}
		// The key may reach the program before it has drawn the state it
		// acts on; then nothing moves and the operator presses again.
		o.waitUntil(300*time.Millisecond, func(s consent.State) bool { return s.Selection != st.Selection || !inQueue(s, q.ID) })
	}
	r.t.Fatalf("could not bring the review for %s (%s) to front", q.Tab, q.Origin)
}

func inQueue(st consent.State, id string) bool {
	for _, q := range st.Queue {
		if q.ID == id {
			return true
		}
	}
	return false
}

// waitUntil waits on the engine's change signal until pred holds or
// patience runs out (then the caller acts again).
func (o *jOperator) waitUntil(patience time.Duration, pred func(consent.State) bool) bool {
	r := o.rig
	ch, stop := r.eng.Changes()
	defer stop()
	give := time.After(patience)
	for {
		if pred(r.eng.Snapshot()) {
			return true
		}
		select {
		case <-ch:
		case <-give:
			return false
		case <-r.ctx.Done():
			r.t.Fatalf("operator: state never came: %v", r.ctx.Err())
		}
	}
}

// answer checks what the fixtures have seen while rev is on screen, then
// presses a or d.
func (o *jOperator) answer(rev consent.Review) {
	r := o.rig
	t := r.t
	o.count[rev.Kind]++
	if o.judge != nil {
		k := "d"
		if o.judge(rev) {
			k = "a"
		}
		o.press(rev, k)
		return
	}
	approve := true
	switch rev.Kind {
	case consent.KindNavigation:
		switch rev.Origin {
		case o.site.URL:
			if o.count[consent.KindNavigation] == 1 && o.site.Total() != 0 {
				t.Errorf("%d requests reached the site before the first navigation was approved", o.site.Total())
			}
		case o.second.URL:
			if n := o.second.Total(); n != 0 {
				t.Errorf("the redirect target saw %d requests while its hop was held", n)
			}
			approve = false
		default:
			t.Errorf("navigation review for an origin the journey never opens: %s", rev.Origin)
			approve = false
		}
		if rev.ApproveLabel != "Allow origin in this tab" {
			t.Errorf("navigation review label %q", rev.ApproveLabel)
		}
	case consent.KindRead:
		if rev.ApproveLabel != "Allow reading this origin" {
			t.Errorf("read review label %q", rev.ApproveLabel)
		}
		if o.count[consent.KindRead] == 1 {
			// Reading waits for the gate: the site has seen the page load
			// (and the browser's own favicon fetch), nothing the console asked.
			for _, q := range o.site.Requests() {
				if q.Path != "/signin.html" && q.Path != "/favicon.ico" {
					t.Errorf("before the first read approval the site saw %s %s", q.Method, q.Path)
				}
			}
		}
	case consent.KindToolCall:
		if rev.ToolCall == nil || rev.ToolCall.ToolName != "save_draft" || rev.ApproveLabel != "Allow once" {
			t.Errorf("tool-call review %+v", rev)
		}
		if n := saveRecords(o.site); n != 0 {
			t.Errorf("save_draft reached the server %d times before Allow once", n)
		}
	case consent.KindDisclosure:
		if rev.ApproveLabel != "Share result" {
			t.Errorf("disclosure label %q", rev.ApproveLabel)
		}
		if n := saveRecords(o.site); n != 1 {
			t.Errorf("at Share result the callback had reached the server %d times, want 1", n)
		}
		if jHasActivity(r.eng.Snapshot(), "callback_returned") {
			t.Error("the agent heard the result before Share result")
		}
	case consent.KindAction:
		if rev.Action == nil || rev.Action.Name != "Open popup" || rev.ApproveLabel != "Allow once" {
			t.Errorf("action review %+v", rev)
		}
		if n := o.site.Count("/link.html"); n != 0 {
			t.Errorf("/link.html requested %d times before the popup exists", n)
		}
	}
	if rev.Kind == consent.KindNavigation && rev.Origin == o.site.URL && o.count[consent.KindNavigation] == 3 {
		// The popup's own consent: nothing of its page loaded yet.
		if n := o.site.Count("/link.html"); n != 0 {
			t.Errorf("the popup's page was requested %d times before its navigation consent", n)
		}
	}
	k := "d"
	if approve {
		k = "a"
	}
	o.press(rev, k)
}

// press sends k for rev once the review has been on screen for the
// key-ahead guard, and presses again only if the review is still pending
// well after (the TUI may have drawn it a moment after the engine did).
func (o *jOperator) press(rev consent.Review, k string) {
	r := o.rig
	if wait := time.Until(rev.ShownAt.Add(journeyDelay + 5*time.Millisecond)); wait > 0 {
		<-time.After(wait)
	}
	ch, stop := r.eng.Changes()
	defer stop()
	for tries := 0; tries < 20; tries++ {
		o.key(k)
		retry := time.After(500 * time.Millisecond)
	wait:
		for {
			if !inQueue(r.eng.Snapshot(), rev.ID) {
				return
			}
			select {
			case <-ch:
			case <-retry:
				break wait
			case <-r.ctx.Done():
				r.t.Fatalf("review %s never resolved", rev.ID)
			}
		}
	}
	r.t.Fatalf("%s review for %s did not take the key %q", rev.Kind, rev.Origin, k)
}

// signIn is the person signing in by hand in the headed window; here it
// is the headless demo's stand-in for those hands, typing through CDP while
// the conversation is taken over.
func (o *jOperator) signIn() {
	r := o.rig
	var tab consent.TabID
	for _, c := range r.eng.Snapshot().Conversations {
		if c.ID == o.conv && len(c.Tabs) > 0 {
			tab = c.Tabs[0].ID
		}
	}
	if err := r.world.signInAs(r.ctx, o.conv, tab); err != nil {
		r.t.Fatalf("the operator could not sign in: %v", err)
	}
}

func jHasActivity(st consent.State, sub string) bool {
	for _, a := range st.Activity {
		if strings.Contains(a.Text, sub) {
			return true
		}
	}
	return false
}

func countReq(s *fixture.Server, method, path string) int {
	n := 0
	for _, q := range s.Requests() {
		if q.Method == method && q.Path == path {
			n++
		}
	}
	return n
}

func countQuery(s *fixture.Server, path, sub string) int {
	n := 0
	for _, q := range s.Requests() {
		if q.Path == path && strings.Contains(q.Query, sub) {
			n++
		}
	}
	return n
}

// saveRecords counts save_draft's POSTs (the upload page's carry kind=).
func saveRecords(s *fixture.Server) int {
	n := 0
	for _, q := range s.Requests() {
		if q.Path == "/record" && q.Method == "POST" && !strings.Contains(q.Query, "kind=") {
			n++
		}
	}
	return n
}
