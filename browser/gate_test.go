package browser

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/tabwarden/tabwarden/consent"
	"github.com/tabwarden/tabwarden/consent/errcode"
)

// fakeGate is a consent engine double whose reviews the test answers: each
// Ask that no grant covers is handed to the test on asks, and the request
// stays held in Chromium until the test replies. Grants are exact
// origin × tab, as design.md §4's navigation gate.
type fakeGate struct {
	asks chan *pendingAsk

	mu      sync.Mutex
	grants  map[string]bool
	tabs    map[consent.TabID]consent.TabInfo
	removed map[consent.TabID]bool
	notes   []string
	paused  map[consent.ConversationID]bool
	lis     []func(consent.Event)
	changed chan struct{}
	// statuses is every browser header the Browser set, in order.
	statuses []string
}

type pendingAsk struct {
	req   consent.Request
	reply chan error
}

func newFakeGate() *fakeGate {
	return &fakeGate{
		asks:    make(chan *pendingAsk, 16),
		grants:  map[string]bool{},
		tabs:    map[consent.TabID]consent.TabInfo{},
		removed: map[consent.TabID]bool{},
		paused:  map[consent.ConversationID]bool{},
		changed: make(chan struct{}),
	}
}

func (g *fakeGate) touch() { close(g.changed); g.changed = make(chan struct{}) }

func (g *fakeGate) Ask(ctx context.Context, req consent.Request) error {
	key := string(req.Tab) + " " + req.Origin
	g.mu.Lock()
	ok := g.grants[key]
	g.mu.Unlock()
	if ok {
		return nil
	}
	p := &pendingAsk{req: req, reply: make(chan error, 1)}
	select {
	case g.asks <- p:
	case <-ctx.Done():
		return errcode.Errorf(errcode.Canceled, errcode.NextNone, "canceled")
	}
	select {
	case err := <-p.reply:
		if err != nil {
			return err
		}
	case <-ctx.Done():
		return errcode.Errorf(errcode.Canceled, errcode.NextNone, "canceled")
	}
	if req.Recheck != nil {
		if err := req.Recheck(); err != nil {
			return err
		}
	}
	g.mu.Lock()
	g.grants[key] = true
	g.mu.Unlock()
	return nil
}

func (g *fakeGate) PutTab(t consent.TabInfo) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.tabs[t.ID] = t
	g.touch()
}

func (g *fakeGate) RemoveTab(id consent.TabID) {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.tabs, id)
	g.removed[id] = true
	g.touch()
}

func (g *fakeGate) Paused(c consent.ConversationID) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.paused[c]
}

func (g *fakeGate) Note(c consent.ConversationID, text string, warn bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.notes = append(g.notes, text)
	g.touch()
}

func (g *fakeGate) Snapshot() consent.State {
	g.mu.Lock()
	defer g.mu.Unlock()
	var st consent.State
	if n := len(g.statuses); n > 0 {
		st.Info.Browser = g.statuses[n-1]
	}
	return st
}

func (g *fakeGate) SetInfo(info consent.Info) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.statuses = append(g.statuses, info.Browser)
	g.touch()
}

func (g *fakeGate) Listen(fn func(consent.Event)) func() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.lis = append(g.lis, fn)
	i := len(g.lis) - 1
	return func() {
		g.mu.Lock()
		defer g.mu.Unlock()
		g.lis[i] = nil
	}
}

func (g *fakeGate) emit(e consent.Event) {
	g.mu.Lock()
	lis := append([]func(consent.Event){}, g.lis...)
	g.mu.Unlock()
	for _, fn := range lis {
		if fn != nil {
			fn(e)
		}
	}
}

// until waits for cond over the gate's state to hold.
func (g *fakeGate) until(t *testing.T, what string, cond func(g *fakeGate) bool) {
	t.Helper()
	deadline := time.NewTimer(20 * time.Second)
	defer deadline.Stop()
	for {
		g.mu.Lock()
		ok := cond(g)
		ch := g.changed
		g.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-ch:
		case <-deadline.C:
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// expectAsk returns the next review, failing unless it is a navigation
// review for origin.
func (g *fakeGate) expectAsk(t *testing.T, origin string) *pendingAsk {
	t.Helper()
	select {
	case p := <-g.asks:
		if p.req.Gate != consent.GateNavigation || p.req.Origin != origin {
			t.Fatalf("asked %s for %q, want navigation for %q", p.req.Gate, p.req.Origin, origin)
		}
		return p
	case <-time.After(20 * time.Second):
		t.Fatalf("no navigation review for %s", origin)
	}
	return nil
}

func (g *fakeGate) noAsk(t *testing.T) {
	t.Helper()
	select {
	case p := <-g.asks:
		t.Fatalf("unexpected review: %s %s", p.req.Gate, p.req.Origin)
	default:
	}
}

func deny() error {
	return &errcode.Error{Code: errcode.UserDenied, Message: "The operator denied this."}
}

// headerStatuses is every browser field written to the header, in order.
func (g *fakeGate) headerStatuses() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]string(nil), g.statuses...)
}
