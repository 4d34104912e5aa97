package webmcp

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/tabwarden/tabwarden/consent"
	"github.com/tabwarden/tabwarden/consent/audit/audittest"
	"github.com/tabwarden/tabwarden/consent/errcode"
)

// gateRig drives the caller's sequence through a real consent engine:
// list → Prepare (validate) → action gate → Invoke → disclosure gate.
type gateRig struct {
	*tabRig
	e   *consent.Engine
	mem *audittest.Memory
	ch  <-chan struct{}
}

func newGateRig(t *testing.T, native bool, f *fixture) *gateRig {
	r := openTab(t, native, f, "/tools.html", Options{})
	mem := &audittest.Memory{}
	e := consent.New(consent.Config{ReviewDelay: 10 * time.Millisecond, ReviewTimeout: 20 * time.Second,
		OpDeadline: 20 * time.Second, Audit: mem})
	ch, unsub := e.Changes()
	t.Cleanup(func() { unsub(); e.Close() })
	e.AddConversation(r.conv, "gate test")
	e.PutTab(consent.TabInfo{ID: r.tab, Conversation: r.conv, URL: f.URL + "/tools.html"})
	return &gateRig{tabRig: r, e: e, mem: mem, ch: ch}
}

// decide waits for a review of kind to be on screen and answers it once
// the key-ahead guard lets it.
func (g *gateRig) decide(kind consent.ReviewKind, approve bool) *consent.Review {
	g.t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		if st := g.e.Snapshot(); st.Focused != nil && st.Focused.Kind == kind {
			err := g.e.Decide(st.Focused.ID, approve)
			if err == nil {
				return st.Focused
			}
			if !errors.Is(err, consent.ErrTooEarly) {
				g.t.Fatal(err)
			}
		}
		select {
		case <-g.ch:
		case <-time.After(20 * time.Millisecond): // the guard expiring is not a change
		case <-deadline:
			g.t.Fatalf("no %s review came on screen", kind)
		}
	}
}

func (g *gateRig) ask(ctx context.Context, req consent.Request) <-chan error {
	out := make(chan error, 1)
	go func() { out <- g.e.Ask(ctx, req) }()
	return out
}

func TestGatedCallSequence(t *testing.T) {
	bothModes(t, func(t *testing.T, native bool) {
		f := newFixture(t)
		g := newGateRig(t, native, f)
		waitFrames(t, f)
		l := g.list()

		op, err := g.e.Begin(context.Background(), g.conv, g.tab, "webmcp_call_tool")
		if err != nil {
			t.Fatal(err)
		}
		c, err := g.broker.Prepare(op.Context(), g.conv, g.tab, toolID(t, l, "save_draft"), json.RawMessage(`{"title":"draft one"}`))
		if err != nil {
			t.Fatal(err)
		}
		asked := g.ask(op.Context(), consent.Request{Gate: consent.GateAction, Conversation: g.conv, Tab: g.tab,
			Origin: c.Tool.Origin, ToolCall: c.ToolCall(), Recheck: c.Fresh})
		rv := g.decide(consent.KindToolCall, true)
		if rv.ToolCall == nil || rv.ToolCall.ToolName != "save_draft" || strings.Contains(rv.ToolCall.InputSummary, "draft one") {
			t.Fatalf("review %+v", rv.ToolCall)
		}
		if f.recordCount() != 0 {
			t.Fatal("the tool ran before Allow once")
		}
		if err := <-asked; err != nil {
			t.Fatal(err)
		}
		res, err := c.Invoke(op.Context())
		if err != nil || f.recordCount() != 1 {
			t.Fatalf("invoke: %s %v, records %d", res, err, f.recordCount())
		}
		asked = g.ask(op.Context(), consent.Request{Gate: consent.GateDisclosure, Conversation: g.conv, Tab: g.tab,
			Origin: c.Tool.Origin, Disclosure: c.Disclosure(res)})
		rv = g.decide(consent.KindDisclosure, true)
		if rv.Disclosure == nil || rv.Disclosure.Result != string(res) {
			t.Fatalf("disclosure review %+v", rv.Disclosure)
		}
		if err := <-asked; err != nil {
			t.Fatal(err)
		}
		op.End()

		// A denied disclosure withholds the canary from everything we produce.
		op, err = g.e.Begin(context.Background(), g.conv, g.tab, "webmcp_call_tool")
		if err != nil {
			t.Fatal(err)
		}
		c, err = g.broker.Prepare(op.Context(), g.conv, g.tab, toolID(t, l, "read_session"), nil)
		if err != nil {
			t.Fatal(err)
		}
		asked = g.ask(op.Context(), consent.Request{Gate: consent.GateAction, Conversation: g.conv, Tab: g.tab,
			Origin: c.Tool.Origin, ToolCall: c.ToolCall(), Recheck: c.Fresh})
		g.decide(consent.KindToolCall, true)
		if err := <-asked; err != nil {
			t.Fatal(err)
		}
		res, err = c.Invoke(op.Context())
		if err != nil || !strings.Contains(string(res), f.canary) {
			t.Fatalf("read_session: %v", err)
		}
		asked = g.ask(op.Context(), consent.Request{Gate: consent.GateDisclosure, Conversation: g.conv, Tab: g.tab,
			Origin: c.Tool.Origin, Disclosure: c.Disclosure(res)})
		g.decide(consent.KindDisclosure, false)
		if err := <-asked; errcode.Of(err) != errcode.ResultWithheld || strings.Contains(err.Error(), f.canary) {
			t.Fatalf("denied disclosure: %v", err)
		}
		op.End()
		recs, _ := json.Marshal(g.mem.Records())
		if strings.Contains(string(recs), f.canary) {
			t.Fatal("the canary reached the audit log")
		}
		if st, _ := json.Marshal(g.e.Snapshot()); strings.Contains(string(st), f.canary) {
			t.Fatal("the canary outlived its review in engine state")
		}
		// A denied action never reaches the page.
		op, _ = g.e.Begin(context.Background(), g.conv, g.tab, "webmcp_call_tool")
		c, err = g.broker.Prepare(op.Context(), g.conv, g.tab, toolID(t, l, "save_draft"), json.RawMessage(`{"title":"no"}`))
		if err != nil {
			t.Fatal(err)
		}
		asked = g.ask(op.Context(), consent.Request{Gate: consent.GateAction, Conversation: g.conv, Tab: g.tab,
			Origin: c.Tool.Origin, ToolCall: c.ToolCall(), Recheck: c.Fresh})
		g.decide(consent.KindToolCall, false)
		if err := <-asked; errcode.Of(err) != errcode.UserDenied {
			t.Fatalf("denied action: %v", err)
		}
		op.End()
		if n := f.recordCount(); n != 1 {
			t.Fatalf("%d records; only the approved call may record", n)
		}
	})
}
