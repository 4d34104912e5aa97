package consent

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/tabwarden/tabwarden/consent/audit/audittest"
	"github.com/tabwarden/tabwarden/consent/errcode"
)

// Short durations for the rules under test. Tests that are not about a
// timeout use the long ones, so a loaded machine cannot fire a timer the
// test did not mean to fire.
const (
	tDelay     = 30 * time.Millisecond
	tOp        = 300 * time.Millisecond
	tTimeout   = 400 * time.Millisecond
	tGuard     = DefaultReviewDelay // tests that must hit the guard before it passes
	longOp     = 20 * time.Second
	longReview = 20 * time.Second
	// waitLimit bounds every wait so a broken engine fails instead of hanging.
	waitLimit = 10 * time.Second
)

type harness struct {
	t   *testing.T
	cfg Config
	e   *Engine
	mem *audittest.Memory
	ch  <-chan struct{}
}

func newHarness(t *testing.T, cfg Config) *harness {
	t.Helper()
	if cfg.ReviewDelay == 0 {
		cfg.ReviewDelay = tDelay
	}
	if cfg.ReviewTimeout == 0 {
		cfg.ReviewTimeout = longReview
	}
	if cfg.OpDeadline == 0 {
		cfg.OpDeadline = longOp
	}
	mem := &audittest.Memory{}
	if cfg.Audit == nil {
		cfg.Audit = mem
	}
	e := New(cfg)
	ch, unsub := e.Changes()
	t.Cleanup(func() { unsub(); e.Close() })
	return &harness{t: t, cfg: cfg, e: e, mem: mem, ch: ch}
}

// std registers conversation c1 with tabs t1 (selected) and t2, and
// conversation c2 with tab t3.
func (h *harness) std() *harness {
	h.e.AddConversation("c1", "one")
	h.e.PutTab(TabInfo{ID: "t1", Conversation: "c1", URL: "about:blank"})
	h.e.PutTab(TabInfo{ID: "t2", Conversation: "c1", URL: "about:blank"})
	h.e.AddConversation("c2", "two")
	h.e.PutTab(TabInfo{ID: "t3", Conversation: "c2", URL: "about:blank"})
	return h
}

// until waits on Changes for cond(Snapshot()) to hold.
func (h *harness) until(what string, cond func(State) bool) State {
	h.t.Helper()
	deadline := time.NewTimer(waitLimit)
	defer deadline.Stop()
	for {
		if st := h.e.Snapshot(); cond(st) {
			return st
		}
		select {
		case <-h.ch:
		case <-deadline.C:
			h.t.Fatalf("timed out waiting for %s; state: %+v", what, h.e.Snapshot())
		}
	}
}

// focused waits for a review of tab to be on screen.
func (h *harness) focused(tab TabID) Review {
	h.t.Helper()
	st := h.until("review focused on "+string(tab), func(s State) bool {
		return s.Focused != nil && s.Focused.Tab == tab
	})
	return *st.Focused
}

// queued waits for n pending reviews.
func (h *harness) queued(n int) State {
	h.t.Helper()
	return h.until("queue length", func(s State) bool { return len(s.Queue) == n })
}

// decide waits out the key-ahead delay (the one place a sleep is the
// behaviour under test) and decides.
func (h *harness) decide(r Review, approve bool) {
	h.t.Helper()
	time.Sleep(time.Until(r.ShownAt.Add(h.cfg.ReviewDelay + 5*time.Millisecond)))
	if err := h.e.Decide(r.ID, approve); err != nil {
		h.t.Fatalf("Decide(%s): %v", r.ID, err)
	}
}

func ask(e *Engine, ctx context.Context, req Request) <-chan error {
	ch := make(chan error, 1)
	go func() { ch <- e.Ask(ctx, req) }()
	return ch
}

func result(t *testing.T, ch <-chan error) error {
	t.Helper()
	select {
	case err := <-ch:
		return err
	case <-time.After(waitLimit):
		t.Fatal("Ask did not return")
		return nil
	}
}

// wantCode fails t unless err is an undispatched *errcode.Error with code.
func wantCode(t *testing.T, err error, code errcode.Code) {
	t.Helper()
	var ce *errcode.Error
	if !errors.As(err, &ce) {
		t.Fatalf("want *errcode.Error %s, got %v", code, err)
	}
	if ce.Code != code {
		t.Fatalf("want code %s, got %s (%v)", code, ce.Code, err)
	}
	if ce.Dispatched {
		t.Fatalf("%s must be dispatched:false", code)
	}
}

// wantCodeErr is wantCode returning the *errcode.Error, for a test that looks
// further into it.
func wantCodeErr(t *testing.T, err error, code errcode.Code) *errcode.Error {
	t.Helper()
	wantCode(t, err, code)
	var ce *errcode.Error
	errors.As(err, &ce)
	return ce
}

// approveAsk runs req through a full review and approval.
func (h *harness) approveAsk(req Request) error {
	h.t.Helper()
	ch := ask(h.e, context.Background(), req)
	h.decide(h.focused(req.Tab), true)
	return result(h.t, ch)
}

func nav(conv ConversationID, tab TabID, origin string) Request {
	return Request{Gate: GateNavigation, Conversation: conv, Tab: tab, Origin: origin}
}

func read(conv ConversationID, tab TabID, origin string) Request {
	return Request{Gate: GateRead, Conversation: conv, Tab: tab, Origin: origin}
}

func act(conv ConversationID, tab TabID, typ ActionType) Request {
	return Request{Gate: GateAction, Conversation: conv, Tab: tab, Origin: "https://a.test", Action: &Action{Type: typ, Ref: "e1"}}
}

func disclose(conv ConversationID, tab TabID, result string) Request {
	return Request{Gate: GateDisclosure, Conversation: conv, Tab: tab, Origin: "https://a.test",
		Disclosure: &Disclosure{ToolName: "search", Result: result, Size: len(result), SHA256: digest(result)}}
}

// events records listener events.
type events struct {
	mu  sync.Mutex
	evs []Event
	got chan struct{}
}

func listenAll(e *Engine) (*events, func()) {
	ev := &events{got: make(chan struct{}, 1)}
	stop := e.Listen(func(x Event) {
		ev.mu.Lock()
		ev.evs = append(ev.evs, x)
		ev.mu.Unlock()
		select {
		case ev.got <- struct{}{}:
		default:
		}
	})
	return ev, stop
}

func (ev *events) kinds() []EventKind {
	ev.mu.Lock()
	defer ev.mu.Unlock()
	var out []EventKind
	for _, x := range ev.evs {
		out = append(out, x.Kind)
	}
	return out
}

// of returns the events so far whose kind is one of kinds, in order.
func (ev *events) of(kinds ...EventKind) []Event {
	ev.mu.Lock()
	defer ev.mu.Unlock()
	var out []Event
	for _, x := range ev.evs {
		if slices.Contains(kinds, x.Kind) {
			out = append(out, x)
		}
	}
	return out
}

func (ev *events) waitFor(t *testing.T, kind EventKind) Event {
	t.Helper()
	deadline := time.After(waitLimit)
	for {
		ev.mu.Lock()
		for _, x := range ev.evs {
			if x.Kind == kind {
				ev.mu.Unlock()
				return x
			}
		}
		ev.mu.Unlock()
		select {
		case <-ev.got:
		case <-deadline:
			t.Fatalf("no %s event; got %v", kind, ev.kinds())
		}
	}
}
