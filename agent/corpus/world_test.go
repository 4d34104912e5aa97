package corpus_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tabwarden/tabwarden/agent"
	"github.com/tabwarden/tabwarden/agent/demo/fixture/fixturetest"
	"github.com/tabwarden/tabwarden/browser"
	"github.com/tabwarden/tabwarden/browser/browsertest"
	"github.com/tabwarden/tabwarden/consent"
	"github.com/tabwarden/tabwarden/consent/audit"
	"github.com/tabwarden/tabwarden/internal/logtest"
	"github.com/tabwarden/tabwarden/internal/stacktest"
	"github.com/tabwarden/tabwarden/policy"
)

// reviewDelay is the key-ahead guard; the operator below waits it out.
const reviewDelay = 20 * time.Millisecond

// world is everything the corpus shares: the origins, the bare Chromium
// and tabwarden (one engine, one Chromium with the corpus policy).
//
// Origins: A serves every page and is the only origin the operator ever
// approves. N (tabwarden side) is allowed by policy but never approved:
// what reaches it got past navigation consent. P is excluded by policy:
// what reaches it got past browserOrigins. Uploads are counted on A itself
// (allowed and approved; only blockBrowserUploads stands in the way). The
// bare side has its own N0 and P0, so the tabwarden witnesses count
// nothing but tabwarden's requests.
//
// B serves frames for the cases that nest one: it is approved too, both as
// itself (same site as A) and as localhost on B's port (another site, so
// Chromium puts its frame in a process of its own).
type world struct {
	A, N, P, N0, P0 *server
	B               *server
	bare            *browsertest.Bare

	stk       *stacktest.Stack
	eng       *consent.Engine
	br        *browser.Browser
	pol       *policy.Policy
	auditPath string
	audit     *audit.FileLog
	// appLog is the console's log file: every slog line of the browser
	// and of the process-wide logger lands here.
	appLog *logtest.Buffer
	logger *slog.Logger
	op     *operator
	dir    string
	nonce  string // makes each run's secrets unique

	// attach, when set, is what the tabwarden side attaches to instead
	// of launching a Chromium (the corpus in attach mode).
	attach browser.Options

	mcpMu sync.Mutex
	mcp   []string // every tool result an agent got, as JSON

	// extra are case placeholders set while the case runs (a witness
	// listener's port), by "case/side".
	extraMu sync.Mutex
	extra   map[string]map[string]string
	// open is the second tabwarden (uploads allowed), started by the
	// first case that needs it.
	openOnce sync.Once
	open     *twSide
	openErr  error
}

// twSide is one tabwarden: a consent engine, a browser under a policy,
// and the operator who approves origin A only.
type twSide struct {
	name string
	stk  *stacktest.Stack
	eng  *consent.Engine
	br   *browser.Browser
	pol  *policy.Policy
	op   *operator
}

func (w *world) mainSide() *twSide {
	return &twSide{name: "uploads blocked", eng: w.eng, br: w.br, pol: w.pol, op: w.op}
}

// openSide is a tabwarden whose policy allows A and N, like the corpus
// world's, with uploads allowed.
func (w *world) openSide(t *testing.T) *twSide {
	t.Helper()
	w.openOnce.Do(func() {
		raw, _ := json.Marshal(map[string]any{"execution": map[string]any{"browserOrigins": []string{w.A.URL, w.N.URL}}})
		s := &twSide{name: "uploads allowed"}
		if s.pol, w.openErr = policy.Parse("corpus-open.json", raw); w.openErr != nil {
			return
		}
		if s.stk, w.openErr = stacktest.Launch(w.stackConfig(s.pol, "profile-open", browser.Options{})); w.openErr != nil {
			return
		}
		s.eng, s.br = s.stk.Engine, s.stk.Browser
		s.op = startOperator(s.eng, w.A.URL)
		w.open = s
	})
	if w.openErr != nil {
		t.Fatalf("the open tabwarden: %v", w.openErr)
	}
	return w.open
}

// stackConfig is one tabwarden of the corpus: policy pol, the shared audit
// file and log, generous review and op clocks (every wait ends on a
// signal, not on these), and attach's BrowserURL when set.
func (w *world) stackConfig(pol *policy.Policy, profile string, attach browser.Options) stacktest.Config {
	return stacktest.Config{
		Engine: consent.Config{ReviewDelay: reviewDelay, ReviewTimeout: 3 * time.Minute, OpDeadline: 3 * time.Minute, Audit: w.audit},
		Browser: browser.Options{ProfileDir: filepath.Join(w.dir, profile), Policy: pol, Logger: w.logger,
			BrowserURL: attach.BrowserURL, BrowserToken: attach.BrowserToken},
		LaunchTimeout: 2 * time.Minute,
	}
}

func (w *world) setExtra(caseName, side, key, val string) {
	w.extraMu.Lock()
	defer w.extraMu.Unlock()
	if w.extra == nil {
		w.extra = map[string]map[string]string{}
	}
	k := caseName + "/" + side
	if w.extra[k] == nil {
		w.extra[k] = map[string]string{}
	}
	w.extra[k][key] = val
}

var (
	shared    *world
	sharedErr error
	once      sync.Once
)

func TestMain(m *testing.M) {
	code := m.Run()
	if shared != nil {
		shared.close()
	}
	os.Exit(code)
}

func (w *world) close() {
	if o := w.open; o != nil {
		o.op.stop()
		o.stk.Close()
	}
	if w.op != nil {
		w.op.stop()
	}
	if w.stk != nil {
		w.stk.Close()
	}
	if w.bare != nil {
		w.bare.Close()
	}
	if w.audit != nil {
		_ = w.audit.Close()
	}
	for _, s := range []*server{w.A, w.N, w.P, w.N0, w.P0, w.B} {
		if s != nil {
			s.close()
		}
	}
	if w.dir != "" {
		_ = os.RemoveAll(w.dir)
	}
}

func getWorld(t *testing.T) *world {
	t.Helper()
	fixturetest.NeedChromium(t)
	once.Do(func() { shared, sharedErr = newWorld(browser.Options{}) })
	if sharedErr != nil {
		t.Fatalf("corpus world: %v", sharedErr)
	}
	return shared
}

// newWorld builds the corpus world; attach's BrowserURL (and token), when
// set, make the tabwarden side attach there.
func newWorld(attach browser.Options) (*world, error) {
	w := &world{appLog: &logtest.Buffer{}, nonce: fmt.Sprintf("%x", time.Now().UnixNano()), attach: attach}
	var err error
	for _, p := range []**server{&w.A, &w.N, &w.P, &w.N0, &w.P0, &w.B} {
		if *p, err = startServer(caseFile, w.expand); err != nil {
			w.close()
			return nil, err
		}
	}
	if w.dir, err = os.MkdirTemp("", "tabwarden-corpus-"); err != nil {
		w.close()
		return nil, err
	}
	raw, _ := json.Marshal(map[string]any{"execution": map[string]any{
		"browserOrigins":      []string{w.A.URL, w.N.URL, w.B.URL, w.localB()},
		"blockBrowserUploads": true,
	}})
	if w.pol, err = policy.Parse("corpus.json", raw); err != nil {
		w.close()
		return nil, err
	}
	w.logger = slog.New(slog.NewTextHandler(w.appLog, &slog.HandlerOptions{Level: slog.LevelDebug}))
	slog.SetDefault(w.logger)
	w.auditPath = filepath.Join(w.dir, "audit.jsonl")
	if w.audit, err = audit.Open(w.auditPath); err != nil {
		w.close()
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if w.bare, err = browsertest.LaunchBare(ctx); err != nil {
		w.close()
		return nil, fmt.Errorf("bare Chromium: %w", err)
	}
	if w.stk, err = stacktest.Launch(w.stackConfig(w.pol, "profile", attach)); err != nil {
		w.close()
		return nil, fmt.Errorf("tabwarden: %w", err)
	}
	w.eng, w.br = w.stk.Engine, w.stk.Browser
	w.op = startOperator(w.eng, w.A.URL, w.B.URL, w.localB())
	return w, nil
}

// env is what a case's placeholders expand to on one side.
func (w *world) env(caseName, side string) map[string]string {
	n, p := w.N, w.P
	if side == sideBare {
		n, p = w.N0, w.P0
	}
	tag := caseName + "-" + side
	ws := func(s *server) string { return "ws" + strings.TrimPrefix(s.URL, "http") + "/w/" + tag + "/ws" }
	env := map[string]string{
		"@A@":      w.A.URL,
		"@N@":      n.URL,
		"@P@":      p.URL,
		"@T@":      tag,
		"@C@":      w.A.URL + "/c/" + caseName + "/" + side,
		"@CB@":     w.B.URL + "/c/" + caseName + "/" + side,
		"@CL@":     w.localB() + "/c/" + caseName + "/" + side,
		"@WA@":     w.A.URL + "/w/" + tag,
		"@WN@":     n.URL + "/w/" + tag,
		"@WP@":     p.URL + "/w/" + tag,
		"@WSA@":    ws(w.A),
		"@WSN@":    ws(n),
		"@WSP@":    ws(p),
		"@DONE@":   w.A.URL + "/done/" + tag,
		"@SECRET@": w.secret(caseName),
	}
	w.extraMu.Lock()
	for k, v := range w.extra[caseName+"/"+side] {
		env[k] = v
	}
	w.extraMu.Unlock()
	return env
}

// localB is B's server under another site: localhost instead of
// 127.0.0.1.
func (w *world) localB() string {
	return "http://localhost:" + strings.TrimPrefix(w.B.URL, "http://127.0.0.1:")
}

var placeholder = regexp.MustCompile(`@[A-Z]+@`)

func (w *world) expand(caseName, side, s string) string {
	env := w.env(caseName, side)
	s = strings.ReplaceAll(s, "@HELPERS@", helpers)
	return placeholder.ReplaceAllStringFunc(s, func(k string) string {
		if v, ok := env[k]; ok {
			return v
		}
		return k
	})
}

// helpers are prepended to pages that use them: done() tells the test the
// page made its attempt (a same-origin GET to A that neither gate stops).
// The load event is reported too (/done/<tag>/load): the tabwarden side
// counts its wait from it, so a page slow to load under a busy machine
// still gets its full window.
const helpers = `<script>function done(){fetch("@DONE@").catch(function(){});}` +
	`addEventListener("load",function(){fetch("@DONE@/load").catch(function(){});});</script>`

const (
	sideBare = "bare"
	sideTW   = "tw"
)

// operator is the person at the keyboard for the whole corpus: it
// approves everything asked for origin A (and the frame origins B)
// except a disclosure ("Share result"), and denies every other review. inspect, when set, sees each
// review on screen before it is answered (the terminal family renders the
// TUI there).
type operator struct {
	eng     *consent.Engine
	origins map[string]bool
	cancel  context.CancelFunc
	done    chan struct{}

	mu      sync.Mutex
	shown   []consent.Review
	inspect func(consent.Review)
}

func startOperator(eng *consent.Engine, origins ...string) *operator {
	ctx, cancel := context.WithCancel(context.Background())
	o := &operator{eng: eng, origins: map[string]bool{}, cancel: cancel, done: make(chan struct{})}
	for _, origin := range origins {
		o.origins[origin] = true
	}
	go o.run(ctx)
	return o
}

func (o *operator) stop() {
	o.cancel()
	<-o.done
}

func (o *operator) setInspect(fn func(consent.Review)) {
	o.mu.Lock()
	o.inspect = fn
	o.mu.Unlock()
}

// approves reports whether the operator approves reviews for origin.
func (o *operator) approves(origin string) bool { return o.origins[origin] }

// reviews returns every review shown for conv.
func (o *operator) reviews(conv consent.ConversationID) []consent.Review {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []consent.Review
	for _, r := range o.shown {
		if r.Conversation == conv {
			out = append(out, r)
		}
	}
	return out
}

func (o *operator) run(ctx context.Context) {
	defer close(o.done)
	changes, unsub := o.eng.Changes()
	defer unsub()
	seen := map[string]bool{}
	for {
		st := o.eng.Snapshot()
		if r := st.Focused; r != nil {
			if !seen[r.ID] {
				seen[r.ID] = true
				o.mu.Lock()
				o.shown = append(o.shown, *r)
				fn := o.inspect
				o.mu.Unlock()
				if fn != nil {
					fn(*r)
				}
			}
			approve := o.approves(r.Origin) && r.Kind != consent.KindDisclosure
			if wait := time.Until(r.ShownAt.Add(reviewDelay)); wait > 0 {
				select {
				case <-time.After(wait):
				case <-ctx.Done():
					return
				}
			}
			err := o.eng.Decide(r.ID, approve)
			if err == nil || errors.Is(err, consent.ErrTooEarly) {
				continue
			}
		} else if len(st.Queue) > 0 {
			// A review waiting behind a tab not on screen (a popup): bring
			// it up, as the operator would when the inventory flags it.
			q := st.Queue[0]
			o.eng.Select(q.Conversation, q.Tab)
		}
		select {
		case <-changes:
		case <-time.After(200 * time.Millisecond):
		case <-ctx.Done():
			return
		}
	}
}

// run is one case's conversation on the tabwarden side.
type run struct {
	t    *testing.T
	ctx  context.Context
	w    *world
	side *twSide
	d    *agent.Dispatcher
	conv consent.ConversationID
	tag  string
}

var convSeq atomic.Int64

func (w *world) newRun(t *testing.T, ctx context.Context, name string) *run {
	return w.newRunOn(t, ctx, name, w.mainSide())
}

// newRunOn is newRun on a given tabwarden.
func (w *world) newRunOn(t *testing.T, ctx context.Context, name string, side *twSide) *run {
	r := &run{t: t, ctx: ctx, w: w, side: side, conv: consent.ConversationID(fmt.Sprintf("corpus-%d-%s", convSeq.Add(1), name)), tag: name + "-" + sideTW}
	side.eng.AddConversation(r.conv, name)
	side.eng.Select(r.conv, "")
	r.d = agent.NewDispatcher(agent.DispatcherConfig{Engine: side.eng, Browser: side.br, Policy: side.pol, Audit: w.audit})
	return r
}

func (r *run) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, tab := range r.side.br.Tabs(r.conv) {
		_ = r.side.br.CloseTab(ctx, r.conv, tab.ID)
	}
	r.d.Close()
	r.side.eng.RemoveConversation(r.conv)
}

func (r *run) call(tool string, args any) agent.Result {
	raw, err := json.Marshal(args)
	if err != nil {
		r.t.Fatal(err)
	}
	res := r.d.Call(r.ctx, r.conv, tool, raw)
	r.w.mcpMu.Lock()
	r.w.mcp = append(r.w.mcp, res.JSON())
	r.w.mcpMu.Unlock()
	return res
}

func (r *run) callOK(tool string, args any) map[string]any {
	r.t.Helper()
	res := r.call(tool, args)
	var obj map[string]any
	if err := json.Unmarshal([]byte(res.JSON()), &obj); err != nil || res.IsError || obj["ok"] != true {
		r.t.Fatalf("%s failed: %s", tool, res.JSON())
	}
	return obj
}

// open opens a case page through the navigation review (approved by the
// operator: the origin is A) and returns the tab.
func (r *run) open(url string) string {
	r.t.Helper()
	obj := r.callOK("browser_open", map[string]any{"url": url})
	tab, _ := obj["tabId"].(string)
	if tab == "" {
		r.t.Fatalf("browser_open returned no tab: %v", obj)
	}
	return tab
}

var refLine = regexp.MustCompile(`(?m)^(e\d+) (\S+) "([^"]*)"`)

// observe returns the observation id and text form of tab.
func (r *run) observe(tab string) (string, string) {
	r.t.Helper()
	obj := r.callOK("browser_observe", map[string]any{"tabId": tab})
	id, _ := obj["observationId"].(string)
	snap, _ := obj["snapshot"].(string)
	return id, snap
}

// refOf is the ref of the first element of role whose name contains name.
func refOf(t *testing.T, snap, role, name string) string {
	t.Helper()
	for _, m := range refLine.FindAllStringSubmatch(snap, -1) {
		if m[2] == role && strings.Contains(m[3], name) {
			return m[1]
		}
	}
	t.Fatalf("no %s %q in the observation:\n%s", role, name, snap)
	return ""
}

// clickGo clicks the page's "Go" element the way an agent does (observe,
// then an approved browser_act click).
func (r *run) clickGo(tab, role string) {
	r.t.Helper()
	obs, snap := r.observe(tab)
	ref := refOf(r.t, snap, role, "Go")
	r.callOK("browser_act", map[string]any{"tabId": tab, "observationId": obs, "action": map[string]any{"type": "click", "ref": ref}})
}
