package grantladder_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tabwarden/tabwarden/agent"
	"github.com/tabwarden/tabwarden/agent/demo/fixture"
	"github.com/tabwarden/tabwarden/consent"
	"github.com/tabwarden/tabwarden/internal/stacktest"
)

// One stack (Chromium and engine) for the binary; each run has its own
// conversation, and the engine's clock can be held still so a test can
// step past a grant's window (consent checks Now on every use).
var stack = &stacktest.Shared{Config: stacktest.Config{Engine: consent.Config{Now: engineNow}}}

// frozen, when non-zero, is the engine's clock (Unix nanoseconds): a test
// holds it still around a grant's end.
var frozen atomic.Int64

const reviewDelay = stacktest.ReviewDelay

func TestMain(m *testing.M) { os.Exit(stack.Run(m)) }

func engineNow() time.Time {
	if f := frozen.Load(); f != 0 {
		return time.Unix(0, f)
	}
	return time.Now()
}

// launch launches the shared stack if no test has yet.
func launch(t *testing.T) { stack.Stack(t) }

// engine is the shared stack's consent engine; its audit (reviews shown,
// decisions) is stack.Launched().Audit.
func engine() *consent.Engine { return stack.Launched().Engine }

// ask is one review the operator answered.
type ask struct {
	Kind    consent.ReviewKind
	Action  string // act type, "upload", "plan", tool name
	Target  string // the action's target name (site text, for the log)
	Origin  string
	Offer   string // what s would cover, or why not
	Refused bool
	Key     string // "a" or "s" (a refused s is counted apart)
	Witness int    // the fixture's count of the step's effect when the review showed
}

// operator plays the person for one conversation: every review of it that
// comes up is answered after the key-ahead guard, with s where the panel
// offers it (mode "s"), with s whatever the panel says (mode "s!", to show
// refusals), or with a (mode "a"); deny lists reviews to deny instead.
type operator struct {
	t     *testing.T
	eng   *consent.Engine
	conv  consent.ConversationID
	mode  string
	deny  bool // deny every review (acceptance tests)
	watch func(consent.Review) int
	// sFor, when set, picks the reviews answered with s (whatever mode).
	sFor func(consent.Review) bool
	// choose, when set, answers each review with "a", "s" or "d".
	choose func(consent.Review) string
	// resumedAt is how many reviews had been answered at the r.
	resumedAt int

	mu       sync.Mutex
	keys     int
	asks     []ask
	refusals []string
	stop     chan struct{}
	done     chan struct{}
}

func newOperator(t *testing.T, eng *consent.Engine, conv consent.ConversationID, mode string) *operator {
	o := &operator{t: t, eng: eng, conv: conv, mode: mode, stop: make(chan struct{}), done: make(chan struct{})}
	go o.run()
	t.Cleanup(o.close)
	return o
}

func (o *operator) close() {
	select {
	case <-o.stop:
	default:
		close(o.stop)
	}
	<-o.done
}

func (o *operator) run() {
	defer close(o.done)
	changes, unsub := o.eng.Changes()
	defer unsub()
	handled := map[string]bool{}
	for {
		st := o.eng.Snapshot()
		for _, r := range st.Queue {
			if r.Conversation == o.conv && !handled[r.ID] && (st.Focused == nil || st.Focused.ID != r.ID) {
				o.eng.Select(r.Conversation, r.Tab) // bring it on screen, as g would
			}
		}
		if f := st.Focused; f != nil && f.Conversation == o.conv && !handled[f.ID] {
			handled[f.ID] = true
			o.answer(*f)
			continue
		}
		select {
		case <-changes:
		case <-o.stop:
			return
		}
	}
}

func (o *operator) answer(r consent.Review) {
	a := ask{Kind: r.Kind, Origin: r.Origin}
	switch {
	case r.Action != nil:
		a.Action, a.Target = string(r.Action.Type), r.Action.Name
	case r.Upload != nil:
		a.Action = "upload"
	case len(r.Plan) > 0:
		a.Action = "plan"
	case r.ToolCall != nil:
		a.Action = r.ToolCall.ToolName
	}
	if r.Scope != nil {
		a.Offer, a.Refused = r.Scope.Text, r.Scope.Refused
	}
	if o.watch != nil {
		a.Witness = o.watch(r)
	}
	// An informed operator answers a read review with a: in strict it
	// already allows the origin for the whole conversation, more than s.
	scoped := r.Scope != nil && (o.mode == "s!" || (o.mode == "s" && !r.Scope.Refused && r.Kind != consent.KindRead))
	if o.sFor != nil {
		scoped = o.sFor(r)
	}
	deny := o.deny
	if o.choose != nil {
		k := o.choose(r)
		scoped, deny = k == "s", k == "d"
	}
	for {
		time.Sleep(reviewDelay + 5*time.Millisecond)
		err := o.eng.DecideAs(consent.Decision{Review: r.ID, Approve: !deny, Scoped: scoped && !deny, By: consent.Operator{Name: "measure"}})
		if errors.Is(err, consent.ErrTooEarly) {
			continue
		}
		var ng *consent.NotGrantableError
		if errors.As(err, &ng) {
			o.mu.Lock()
			o.keys++ // the s that was refused was pressed all the same
			o.refusals = append(o.refusals, err.Error())
			o.mu.Unlock()
			scoped = false
			continue
		}
		if err != nil && !errors.Is(err, consent.ErrNoSuchReview) {
			o.t.Errorf("decide %s: %v", r.Kind, err)
		}
		break
	}
	a.Key = "a"
	if deny {
		a.Key = "d"
	} else if scoped {
		a.Key = "s"
	}
	o.mu.Lock()
	o.keys++
	o.asks = append(o.asks, a)
	o.mu.Unlock()
}

// resume is the operator's r after a hand-off.
func (o *operator) resume() {
	if err := o.eng.ResumeAs(o.conv, consent.Operator{Name: "measure"}); err != nil {
		o.t.Fatal(err)
	}
	o.mu.Lock()
	o.keys++
	o.resumedAt = len(o.asks)
	o.mu.Unlock()
}

func (o *operator) snapshot() (keys int, asks []ask, refusals []string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.keys, append([]ask(nil), o.asks...), append([]string(nil), o.refusals...)
}

// agentRun is one scripted agent: a conversation, its dispatcher and tab.
type agentRun struct {
	t     *testing.T
	ctx   context.Context
	d     *agent.Dispatcher
	conv  consent.ConversationID
	tab   string
	steps int
	// shopURL is the page a test reopens after closing the tab.
	shopURL string
}

func newAgent(t *testing.T, name string) *agentRun {
	t.Helper()
	stk := stack.Stack(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	t.Cleanup(cancel)
	c := stk.Conversation(t, name)
	return &agentRun{t: t, ctx: ctx, d: c.Dispatcher, conv: c.ID}
}

func newSite(t *testing.T) *fixture.Server { return stack.Stack(t).Site(t) }

// call runs one tool call and returns its result object.
func (a *agentRun) call(tool string, args map[string]any) map[string]any {
	a.t.Helper()
	if a.tab != "" && args["tabId"] == nil && tool != "browser_open" && tool != "browser_tabs" {
		args["tabId"] = a.tab
	}
	raw, err := json.Marshal(args)
	if err != nil {
		a.t.Fatal(err)
	}
	res := a.d.Call(a.ctx, a.conv, tool, raw)
	var obj map[string]any
	if err := json.Unmarshal([]byte(res.JSON()), &obj); err != nil {
		a.t.Fatal(err)
	}
	return obj
}

func (a *agentRun) must(tool string, args map[string]any) map[string]any {
	a.t.Helper()
	obj := a.call(tool, args)
	if obj["ok"] != true {
		a.t.Fatalf("%s %v: %v", tool, args, obj)
	}
	return obj
}

// step is one of the task's steps: counted.
func (a *agentRun) step(tool string, args map[string]any) map[string]any {
	a.t.Helper()
	a.steps++
	return a.must(tool, args)
}

func (a *agentRun) open(u string) {
	a.t.Helper()
	obj := a.step("browser_open", map[string]any{"url": u})
	a.tab, _ = obj["tabId"].(string)
}

// observe reads the page (not a step of its own: the agent reads between
// steps; the read gate asks once per origin).
func (a *agentRun) observe() (string, string) {
	a.t.Helper()
	obj := a.must("browser_observe", map[string]any{})
	id, _ := obj["observationId"].(string)
	snap, _ := obj["snapshot"].(string)
	return id, snap
}

var lineRE = regexp.MustCompile(`(?m)^(e\d+) (\w+) "([^"]*)"`)

func refOf(t *testing.T, snap, role, name string) string {
	t.Helper()
	for _, m := range lineRE.FindAllStringSubmatch(snap, -1) {
		if m[2] == role && m[3] == name {
			return m[1]
		}
	}
	t.Fatalf("no %s %q in:\n%s", role, name, snap)
	return ""
}

// act observes, then does one action on the element role/name (empty
// role: no target, a scroll). It returns the result.
func (a *agentRun) act(typ, role, name string, extra map[string]any) map[string]any {
	a.t.Helper()
	obs, snap := a.observe()
	action := map[string]any{"type": typ}
	if role != "" {
		action["ref"] = refOf(a.t, snap, role, name)
	}
	for k, v := range extra {
		action[k] = v
	}
	res := a.call("browser_act", map[string]any{"observationId": obs, "action": action})
	for try := 0; try < 3 && res["code"] == "stale_observation"; try++ {
		// The page moved after the observation (a scroll landing late):
		// the agent does what next says, observes and acts again.
		obs, snap = a.observe()
		if role != "" {
			action["ref"] = refOf(a.t, snap, role, name)
		}
		res = a.call("browser_act", map[string]any{"observationId": obs, "action": action})
	}
	a.steps++
	return res
}

func (a *agentRun) mustAct(typ, role, name string, extra map[string]any) map[string]any {
	a.t.Helper()
	obj := a.act(typ, role, name, extra)
	if obj["ok"] != true {
		a.t.Fatalf("%s %s %q: %v", typ, role, name, obj)
	}
	return obj
}

func (a *agentRun) click(role, name string) { a.mustAct("click", role, name, nil) }
func (a *agentRun) fill(name, text string) {
	a.mustAct("fill", "textbox", name, map[string]any{"text": text})
}
func (a *agentRun) choose(name, label string) {
	a.mustAct("select", "combobox", name, map[string]any{"label": label})
}
func (a *agentRun) scroll(dy int) {
	a.t.Helper()
	a.mustAct("scroll", "", "", map[string]any{"x": 100, "y": 100, "deltaY": dy})
	// The page reports the scroll a moment later; an agent that acts on
	// an observation from before would be told stale_observation. Observe
	// until the position holds.
	last := ""
	for range 20 {
		obj := a.must("browser_observe", map[string]any{})
		pos := fmt.Sprint(obj["scroll"])
		if pos == last {
			return
		}
		last = pos
		time.Sleep(30 * time.Millisecond)
	}
}

func (a *agentRun) upload(name, filename string) {
	a.t.Helper()
	var res map[string]any
	for try := 0; try < 4 && (res == nil || res["code"] == "stale_observation"); try++ {
		obs, snap := a.observe() // again when the page moved after it
		res = a.call("browser_upload", map[string]any{"observationId": obs, "ref": refOf(a.t, snap, "button", name),
			"filename": filename, "contentBase64": "aGVsbG8="})
	}
	a.steps++
	if res["ok"] != true {
		a.t.Fatalf("upload %s: %v", name, res)
	}
}

// waitPath waits for the tab to show a URL whose path is path.
func (a *agentRun) waitPath(path string) {
	a.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		obj := a.must("browser_tabs", map[string]any{})
		tabs, _ := obj["tabs"].([]any)
		for _, x := range tabs {
			tab, _ := x.(map[string]any)
			if tab["tabId"] == a.tab {
				u, _ := url.Parse(fmt.Sprint(tab["url"]))
				if u != nil && u.Path == path && tab["status"] != "loading" {
					return
				}
			}
		}
		if time.Now().After(deadline) {
			a.t.Fatalf("tab never reached %s: %v", path, obj)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// events counts the witness records /record?ev=ev that reached s.
func events(s *fixture.Server, ev string) int {
	n := 0
	for _, r := range s.Requests() {
		if r.Path == "/record" {
			if q, err := url.ParseQuery(r.Query); err == nil && q.Get("ev") == ev {
				n++
			}
		}
	}
	return n
}

// waitEvents waits for n witness records of ev.
func waitEvents(t *testing.T, s *fixture.Server, ev string, n int) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for events(s, ev) < n {
		if time.Now().After(deadline) {
			t.Fatalf("%d %s record(s), want %d", events(s, ev), ev, n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func lineFor(asks []ask) string {
	var parts []string
	for _, a := range asks {
		what := string(a.Kind)
		if a.Action != "" {
			what += " " + a.Action
		}
		if a.Target != "" {
			what += " " + strconv.Quote(a.Target)
		}
		parts = append(parts, what+"="+a.Key)
	}
	return strings.Join(parts, ", ")
}
