package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tabwarden/tabwarden/agent"
	"github.com/tabwarden/tabwarden/agent/demo/fixture"
	"github.com/tabwarden/tabwarden/agent/demo/fixture/fixturetest"
	"github.com/tabwarden/tabwarden/browser"
	"github.com/tabwarden/tabwarden/consent"
	"github.com/tabwarden/tabwarden/consent/audit"
	"github.com/tabwarden/tabwarden/consent/audit/audittest"
	"github.com/tabwarden/tabwarden/consent/errcode"
	"github.com/tabwarden/tabwarden/policy"
)

// The end-to-end tests share one Chromium and one consent engine per test
// binary (the machine is small and a launch costs seconds). Isolation comes
// from everything else being per test: each test has its own conversation
// (so its own grants, tabs and reviews), its own fixture servers (so its own
// origins and request counters) and its own Dispatcher and audit sink.
// Tests do not run in parallel: the engine has one operator focus.

// reviewDelay is the key-ahead guard in these tests. The CLI enforces the
// 250 ms minimum; the engine accepts less so tests stay short, and the
// operator below still has to wait it out, as a person would.
const reviewDelay = 20 * time.Millisecond

// endedGrace is how long an ended conversation's tabs stay open in these
// tests (the console's default is consent.DefaultEndedTabGrace). Tests
// close their tabs before their conversation ends, so only the test of the
// grace itself waits it out.
const endedGrace = 3 * time.Second

var shared struct {
	once    sync.Once
	err     error
	eng     *consent.Engine
	br      *browser.Browser
	engLog  *audittest.Memory // the engine's audit: reviews shown, decisions, take-overs
	profile string
}

func TestMain(m *testing.M) {
	code := m.Run()
	if shared.br != nil {
		_ = shared.br.Close()
	}
	closing.Wait()
	if shared.eng != nil {
		shared.eng.Close()
	}
	if shared.profile != "" {
		_ = os.RemoveAll(shared.profile)
	}
	os.Exit(code)
}

// chromium launches the shared browser on first use, so the package's
// browser-free tests never pay for it.
func chromium(t *testing.T) {
	t.Helper()
	fixturetest.NeedChromium(t)
	if _, err := browser.FindChromium(""); err != nil {
		t.Fatalf("no Chromium: %v", err)
	}
	shared.once.Do(func() {
		shared.engLog = &audittest.Memory{}
		shared.eng = consent.New(consent.Config{ReviewDelay: reviewDelay, Audit: shared.engLog, EndedTabGrace: endedGrace})
		dir, err := os.MkdirTemp("", "tabwarden-e2e-")
		if err != nil {
			shared.err = err
			return
		}
		shared.profile = dir
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		defer cancel()
		shared.br, shared.err = browser.Launch(ctx, browser.Options{
			Headless:   true,
			ProfileDir: filepath.Join(dir, "profile"),
			Gate:       shared.eng,
		})
	})
	if shared.err != nil {
		t.Fatalf("launch Chromium: %v", shared.err)
	}
}

// e2e is one test's world: a conversation on the shared engine, a
// Dispatcher over the shared browser, a fixture site and the operator.
type e2e struct {
	t    *testing.T
	ctx  context.Context
	eng  *consent.Engine
	br   *browser.Browser
	d    *agent.Dispatcher
	log  *audittest.Memory // the dispatcher's tool_call records
	conv consent.ConversationID
	site *fixture.Server
	op   *operator
}

// convSeq keeps conversation ids unique across -count runs, since the
// engine (and its audit, which reviewsShown reads) outlives each test.
var convSeq atomic.Int64

type e2eOption func(*agent.DispatcherConfig)

func withPolicy(p *policy.Policy) e2eOption {
	return func(c *agent.DispatcherConfig) { c.Policy = p }
}

func newE2E(t *testing.T, opts ...e2eOption) *e2e {
	t.Helper()
	chromium(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	t.Cleanup(cancel)
	e := &e2e{
		t: t, ctx: ctx, eng: shared.eng, br: shared.br,
		log:  &audittest.Memory{},
		conv: consent.ConversationID(fmt.Sprintf("e2e-%d-%s", convSeq.Add(1), t.Name())),
		site: newSite(t),
	}
	e.eng.AddConversation(e.conv, t.Name())
	// The conversation must be the selected one for its reviews to come on
	// screen, as the operator would have it in the TUI.
	e.eng.Select(e.conv, "")
	cfg := agent.DispatcherConfig{Engine: e.eng, Browser: e.br, Audit: e.log}
	for _, o := range opts {
		o(&cfg)
	}
	e.d = agent.NewDispatcher(cfg)
	e.op = &operator{t: t, ctx: ctx, eng: e.eng}
	t.Cleanup(func() {
		e.d.Close()
		e.closeTabs(e.conv)
		e.eng.RemoveConversation(e.conv)
	})
	return e
}

// otherConv registers a second conversation (not selected) for this test.
func (e *e2e) otherConv(name string) consent.ConversationID {
	id := consent.ConversationID(fmt.Sprintf("e2e-%d-%s-%s", convSeq.Add(1), e.t.Name(), name))
	e.eng.AddConversation(id, name)
	e.t.Cleanup(func() {
		e.closeTabs(id)
		e.eng.RemoveConversation(id)
	})
	return id
}

func (e *e2e) closeTabs(conv consent.ConversationID) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, tab := range e.br.Tabs(conv) {
		_ = e.br.CloseTab(ctx, conv, tab.ID)
	}
}

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
				e.op.decide(r, false)
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

// operator plays the person at the keyboard: it waits for a review to come
// on screen and answers it with one decision, honouring the key-ahead guard.
type operator struct {
	t   *testing.T
	ctx context.Context
	eng *consent.Engine

	mu      sync.Mutex
	decided []consent.Review
}

// await returns the focused review once it is of kind for origin. Any other
// review on screen meanwhile is a failure: the test says which review each
// step must show.
func (o *operator) await(kind consent.ReviewKind, origin string) consent.Review {
	o.t.Helper()
	changes, stop := o.eng.Changes()
	defer stop()
	for {
		st := o.eng.Snapshot()
		if r := st.Focused; r != nil {
			if r.Kind != kind || r.Origin != origin {
				o.t.Fatalf("review on screen is %s for %s (%q), want %s for %s", r.Kind, r.Origin, r.ApproveLabel, kind, origin)
			}
			return *r
		}
		select {
		case <-changes:
		case <-o.ctx.Done():
			o.t.Fatalf("no %s review for %s came on screen; queue %+v", kind, origin, st.Queue)
		}
	}
}

// awaitQueued returns a pending review of kind for origin, on screen or
// waiting in the queue for its tab to be selected.
func (o *operator) awaitQueued(kind consent.ReviewKind, origin string) consent.Review {
	o.t.Helper()
	changes, stop := o.eng.Changes()
	defer stop()
	for {
		st := o.eng.Snapshot()
		for _, r := range st.Queue {
			if r.Kind == kind && r.Origin == origin {
				return r
			}
		}
		select {
		case <-changes:
		case <-o.ctx.Done():
			o.t.Fatalf("no %s review for %s was queued; queue %+v", kind, origin, st.Queue)
		}
	}
}

// decide answers r. A decision sooner than the review delay is ignored by
// the engine (ErrTooEarly), so the operator waits it out and presses again.
func (o *operator) decide(r consent.Review, approve bool) {
	o.t.Helper()
	for {
		if wait := time.Until(r.ShownAt.Add(reviewDelay)); wait > 0 {
			select {
			case <-time.After(wait):
			case <-o.ctx.Done():
				o.t.Fatalf("decide %s: %v", r.ID, o.ctx.Err())
			}
		}
		err := o.eng.Decide(r.ID, approve)
		if errors.Is(err, consent.ErrTooEarly) {
			r.ShownAt = time.Now()
			continue
		}
		if err != nil {
			o.t.Fatalf("decide %s review %s: %v", r.Kind, r.ID, err)
		}
		o.mu.Lock()
		o.decided = append(o.decided, r)
		o.mu.Unlock()
		return
	}
}

func (o *operator) approve(kind consent.ReviewKind, origin string) consent.Review {
	o.t.Helper()
	r := o.await(kind, origin)
	o.decide(r, true)
	return r
}

func (o *operator) deny(kind consent.ReviewKind, origin string) consent.Review {
	o.t.Helper()
	r := o.await(kind, origin)
	o.decide(r, false)
	return r
}

// reviewsShown counts the reviews of kind the engine put on screen for
// conv, from the engine's own audit (written synchronously as each review
// is shown, so the count is exact when read).
func reviewsShown(conv consent.ConversationID, kind consent.ReviewKind) int {
	n := 0
	for _, r := range shared.engLog.Records() {
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
	e.op.approve(consent.KindNavigation, e.site.URL)
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
		e.op.approve(consent.KindRead, e.site.URL)
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

// newSite starts a fixture origin for one test. Its Close waits up to 5 s
// for the sockets Chromium preconnects and never uses (net/http counts a
// connection without a request as idle only after 5 s), so servers close in
// the background and TestMain waits for them after Chromium is gone.
func newSite(t *testing.T) *fixture.Server {
	t.Helper()
	s, err := fixture.New()
	if err != nil {
		t.Fatalf("fixture: %v", err)
	}
	t.Cleanup(func() {
		closing.Add(1)
		go func() {
			defer closing.Done()
			s.Close()
		}()
	})
	return s
}

var closing sync.WaitGroup

func consentTab(id string) consent.TabID { return consent.TabID(id) }
