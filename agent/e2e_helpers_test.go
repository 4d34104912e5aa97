package agent_test

import (
	"context"
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/tabwarden/tabwarden/agent"
	"github.com/tabwarden/tabwarden/agent/demo/fixture"
	"github.com/tabwarden/tabwarden/browser"
	"github.com/tabwarden/tabwarden/consent"
	"github.com/tabwarden/tabwarden/consent/audit"
	"github.com/tabwarden/tabwarden/consent/audit/audittest"
	"github.com/tabwarden/tabwarden/consent/errcode"
	"github.com/tabwarden/tabwarden/internal/stacktest"
	"github.com/tabwarden/tabwarden/policy"
)

// The end-to-end tests share one stack (one Chromium, one consent engine)
// per test binary: the machine is small and a launch costs seconds.
// Isolation comes from everything else being per test: each test has its
// own conversation (so its own grants, tabs and reviews), its own fixture
// servers (so its own origins and request counters) and its own
// Dispatcher and audit sink. Tests do not run in parallel: the engine has
// one operator focus.

// reviewDelay is the key-ahead guard in these tests (stacktest's).
const reviewDelay = stacktest.ReviewDelay

// endedGrace is how long an ended conversation's tabs stay open in these
// tests (the console's default is consent.DefaultEndedTabGrace). Tests
// close their tabs before their conversation ends, so only the test of the
// grace itself waits it out.
const endedGrace = 3 * time.Second

// stack is launched by the first test that needs a browser, so the
// package's browser-free tests never pay for it. Its engine's audit
// (reviews shown, decisions, take-overs) is stack.Launched().Audit.
var stack = &stacktest.Shared{Config: stacktest.Config{Engine: consent.Config{EndedTabGrace: endedGrace}}}

func TestMain(m *testing.M) { os.Exit(stack.Run(m)) }

// e2e is one test's world: a conversation on the shared engine, a
// Dispatcher over the shared browser, a fixture site and the operator.
type e2e struct {
	t    *testing.T
	ctx  context.Context
	stk  *stacktest.Stack
	eng  *consent.Engine
	br   *browser.Browser
	d    *agent.Dispatcher
	log  *audittest.Memory // the dispatcher's tool_call records
	conv consent.ConversationID
	site *fixture.Server
	op   *stacktest.Operator
}

type e2eOption func(*agent.DispatcherConfig)

func withPolicy(p *policy.Policy) e2eOption {
	return func(c *agent.DispatcherConfig) { c.Policy = p }
}

func newE2E(t *testing.T, opts ...e2eOption) *e2e {
	t.Helper()
	stk := stack.Stack(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	t.Cleanup(cancel)
	tune := make([]func(*agent.DispatcherConfig), len(opts))
	for i, o := range opts {
		tune[i] = o
	}
	c := stk.Conversation(t, t.Name(), tune...)
	return &e2e{
		t: t, ctx: ctx, stk: stk, eng: stk.Engine, br: stk.Browser,
		d: c.Dispatcher, log: c.Log, conv: c.ID,
		site: stk.Site(t),
		op:   stk.Operator(t, ctx),
	}
}

// otherConv registers a second conversation (not selected) for this test.
func (e *e2e) otherConv(name string) consent.ConversationID {
	return e.stk.AddConversation(e.t, name)
}

func (e *e2e) closeTabs(conv consent.ConversationID) { e.stk.CloseTabs(conv) }

// pending is a tool call running in the background, for the steps where
// the test plays the operator while the call waits.
type pending struct {
	t   *testing.T
	ctx context.Context
	ch  chan agent.Result
	res *agent.Result
}

func (e *e2e) start(tool string, args any) *pending {
	return e.startAs(e.conv, tool, args)
}

func (e *e2e) startAs(conv consent.ConversationID, tool string, args any) *pending {
	e.t.Helper()
	raw := rawArgs(e.t, args)
	p := &pending{t: e.t, ctx: e.ctx, ch: make(chan agent.Result, 1)}
	go func() { p.ch <- e.d.Call(e.ctx, conv, tool, raw) }()
	return p
}

// returned reports, without waiting, whether the call has finished.
func (p *pending) returned() bool {
	if p.res != nil {
		return true
	}
	select {
	case r := <-p.ch:
		p.res = &r
		return true
	default:
		return false
	}
}

func (p *pending) result() agent.Result {
	p.t.Helper()
	if p.res != nil {
		return *p.res
	}
	select {
	case r := <-p.ch:
		p.res = &r
		return r
	case <-p.ctx.Done():
		p.t.Fatalf("tool call did not return: %v", p.ctx.Err())
		return agent.Result{}
	}
}

// call runs a tool call that must show no review at all: any review that
// comes up meanwhile fails the test (and is denied so the call ends).
func (e *e2e) call(tool string, args any) agent.Result {
	e.t.Helper()
	return e.callAs(e.conv, tool, args)
}

func (e *e2e) callAs(conv consent.ConversationID, tool string, args any) agent.Result {
	e.t.Helper()
	changes, stop := e.eng.Changes()
	defer stop()
	// Reviews already pending belong to other calls of the test.
	earlier := map[string]bool{}
	for _, r := range e.eng.Snapshot().Queue {
		earlier[r.ID] = true
	}
	p := e.startAs(conv, tool, args)
	for {
		st := e.eng.Snapshot()
		for _, r := range st.Queue {
			if earlier[r.ID] {
				continue
			}
			e.t.Errorf("%s showed an unexpected %s review for %s (%q)", tool, r.Kind, r.Origin, r.ApproveLabel)
			earlier[r.ID] = true
			if st.Focused != nil && st.Focused.ID == r.ID {
				e.op.Decide(r, false)
			} else {
				_ = e.eng.Cancel(r.Conversation)
			}
		}
		select {
		case r := <-p.ch:
			p.res = &r
			return r
		case <-changes:
		case <-e.ctx.Done():
			e.t.Fatalf("%s did not return: %v", tool, e.ctx.Err())
		}
	}
}

func rawArgs(t *testing.T, args any) json.RawMessage {
	t.Helper()
	switch a := args.(type) {
	case nil:
		return nil
	case string:
		return json.RawMessage(a)
	case json.RawMessage:
		return a
	}
	b, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// reviewsShown counts the reviews of kind the engine put on screen for
// conv, from the engine's own audit (written synchronously as each review
// is shown, so the count is exact when read).
func reviewsShown(conv consent.ConversationID, kind consent.ReviewKind) int {
	n := 0
	for _, r := range stack.Launched().Audit.Records() {
		if r.Kind == audit.KindReviewShown && r.Conversation == string(conv) && r.ReviewKind == string(kind) {
			n++
		}
	}
	return n
}

// open opens path on the site in a new tab through the navigation review
// and returns the tab id.
func (e *e2e) open(path string) string {
	e.t.Helper()
	p := e.start("browser_open", map[string]any{"url": e.site.URL + path})
	e.op.Approve(consent.KindNavigation, e.site.URL)
	obj := wantOK(e.t, p.result())
	tab, _ := obj["tabId"].(string)
	if tab == "" {
		e.t.Fatalf("open returned no tabId: %v", obj)
	}
	return tab
}

// observe observes tab; read says whether the read review must come first.
func (e *e2e) observe(tab string, read bool) (obsID, snapshot string) {
	e.t.Helper()
	var res agent.Result
	if read {
		p := e.start("browser_observe", map[string]any{"tabId": tab})
		e.op.Approve(consent.KindRead, e.site.URL)
		res = p.result()
	} else {
		res = e.call("browser_observe", map[string]any{"tabId": tab})
	}
	obj := wantOK(e.t, res)
	obsID, _ = obj["observationId"].(string)
	snapshot, _ = obj["snapshot"].(string)
	if obsID == "" || snapshot == "" {
		e.t.Fatalf("observation without id or snapshot: %v", obj)
	}
	return obsID, snapshot
}

// refOf finds the ref of the element named name in an observation's text form.
func refOf(t *testing.T, snapshot, role, name string) string {
	t.Helper()
	re := regexp.MustCompile(`(?m)^(e\d+) ` + regexp.QuoteMeta(role) + ` "` + regexp.QuoteMeta(name) + `"`)
	m := re.FindStringSubmatch(snapshot)
	if m == nil {
		t.Fatalf("no %s %q in the observation:\n%s", role, name, snapshot)
	}
	return m[1]
}

func click(tab, obs, ref string) map[string]any {
	return map[string]any{"tabId": tab, "observationId": obs, "action": map[string]any{"type": "click", "ref": ref}}
}

func wantOK(t *testing.T, r agent.Result) map[string]any {
	t.Helper()
	if r.IsError || r.Object["ok"] != true {
		t.Fatalf("want ok, got %s", r.JSON())
	}
	return roundTrip(t, r)
}

// envelopeKeys are exactly the fields of a design.md §5 failure.
var envelopeKeys = []string{"ok", "code", "error", "dispatched", "mayHaveChangedState", "retrySafe", "next", "trust"}

var nexts = map[string]bool{"observe": true, "observe_before_retry": true, "review": true, "user_resume": true, "list_tabs": true}

// wantFail checks the whole failure envelope (design.md §5), not just the code:
// every failure says whether it was dispatched, never invites a retry, names
// a next step and carries the trust label.
func wantFail(t *testing.T, r agent.Result, code errcode.Code, dispatched bool) map[string]any {
	t.Helper()
	obj := roundTrip(t, r)
	if !r.IsError {
		t.Fatalf("want %s (isError), got %s", code, r.JSON())
	}
	var keys []string
	for k := range obj {
		keys = append(keys, k)
	}
	if len(keys) != len(envelopeKeys) {
		t.Errorf("failure envelope has fields %v, want exactly %v", keys, envelopeKeys)
	}
	for _, k := range envelopeKeys {
		if _, ok := obj[k]; !ok {
			t.Errorf("failure envelope lacks %q: %s", k, r.JSON())
		}
	}
	if obj["ok"] != false {
		t.Errorf("ok = %v", obj["ok"])
	}
	if obj["code"] != string(code) {
		t.Fatalf("code = %v, want %s: %s", obj["code"], code, r.JSON())
	}
	if msg, _ := obj["error"].(string); strings.TrimSpace(msg) == "" {
		t.Errorf("empty error message: %s", r.JSON())
	}
	if obj["dispatched"] != dispatched {
		t.Errorf("dispatched = %v, want %v: %s", obj["dispatched"], dispatched, r.JSON())
	}
	may, isBool := obj["mayHaveChangedState"].(bool)
	if !isBool || (dispatched && !may) || (!dispatched && may) {
		t.Errorf("mayHaveChangedState = %v with dispatched %v", obj["mayHaveChangedState"], dispatched)
	}
	if obj["retrySafe"] != false {
		t.Errorf("retrySafe = %v", obj["retrySafe"])
	}
	if n, _ := obj["next"].(string); !nexts[n] {
		t.Errorf("next = %q is not one of design.md §5's", obj["next"])
	}
	if obj["trust"] != agent.TrustUntrusted {
		t.Errorf("trust = %v", obj["trust"])
	}
	return obj
}

// roundTrip reads the result as the model would: the compact JSON text.
func roundTrip(t *testing.T, r agent.Result) map[string]any {
	t.Helper()
	var obj map[string]any
	if err := json.Unmarshal([]byte(r.JSON()), &obj); err != nil {
		t.Fatalf("result is not JSON: %v", err)
	}
	return obj
}

// waitTabGone waits until the engine has forgotten a closed tab.
func (e *e2e) waitTabGone(tab string) {
	e.t.Helper()
	changes, stop := e.eng.Changes()
	defer stop()
	for {
		if _, known := e.eng.Owner(consent.TabID(tab)); !known {
			return
		}
		select {
		case <-changes:
		case <-e.ctx.Done():
			e.t.Fatalf("tab %s still known to the engine after close", tab)
		}
	}
}

// waitTab waits until the engine's view of tab (as the browser reported
// it) satisfies ok.
func (e *e2e) waitTab(tab consent.TabID, what string, ok func(consent.TabState) bool) {
	e.t.Helper()
	changes, stop := e.eng.Changes()
	defer stop()
	for {
		var last *consent.TabState
		for _, c := range e.eng.Snapshot().Conversations {
			for _, ts := range c.Tabs {
				if ts.ID == tab {
					last = &ts
				}
			}
		}
		if last != nil && ok(*last) {
			return
		}
		select {
		case <-changes:
		case <-e.ctx.Done():
			e.t.Fatalf("tab %s never %s; last %+v", tab, what, last)
		}
	}
}

// recordHits counts the fixture's /record requests tagged from=tag.
func recordHits(s *fixture.Server, tag string) int {
	n := 0
	for _, r := range s.Requests() {
		if r.Path == "/record" && strings.Contains(r.Query, "from="+tag) {
			n++
		}
	}
	return n
}

func waitRecord(t *testing.T, ctx context.Context, s *fixture.Server, tag string) {
	t.Helper()
	if _, err := s.WaitFor(ctx, func(r fixture.Request) bool {
		return r.Path == "/record" && strings.Contains(r.Query, "from="+tag)
	}); err != nil {
		t.Fatalf("the server never saw %s: %v", tag, err)
	}
}

func mustPolicy(t *testing.T, origins ...string) *policy.Policy {
	t.Helper()
	b, _ := json.Marshal(map[string]any{"execution": map[string]any{"browserOrigins": origins}})
	p, err := policy.Parse("e2e.json", b)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// newSite starts another fixture origin for one test.
func newSite(t *testing.T) *fixture.Server { return stack.Stack(t).Site(t) }

func consentTab(id string) consent.TabID { return consent.TabID(id) }
