package stacktest

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tabwarden/tabwarden/agent"
	"github.com/tabwarden/tabwarden/consent"
	"github.com/tabwarden/tabwarden/consent/audit/audittest"
)

// Conversation is one agent's conversation on the stack's engine with its
// own Dispatcher: its own grants, tabs, reviews and tool_call audit.
type Conversation struct {
	ID         consent.ConversationID
	Dispatcher *agent.Dispatcher
	// Log is the dispatcher's audit (one tool_call record per call) when
	// the options left DispatcherConfig.Audit nil.
	Log *audittest.Memory
}

// convSeq keeps conversation ids unique across tests and -count runs: a
// shared engine (and its audit) outlives each test.
var convSeq atomic.Int64

// Conversation registers a conversation named name and selects it, as the
// operator would have it on screen in the console, with a Dispatcher over
// the stack; tune may adjust the dispatcher's config. At t's cleanup the
// dispatcher closes, the conversation's tabs close and it is removed.
func (s *Stack) Conversation(t testing.TB, name string, tune ...func(*agent.DispatcherConfig)) *Conversation {
	t.Helper()
	c := &Conversation{ID: s.AddConversation(t, name)}
	s.Engine.Select(c.ID, "")
	cfg := agent.DispatcherConfig{Engine: s.Engine, Browser: s.Browser}
	for _, f := range tune {
		f(&cfg)
	}
	if cfg.Audit == nil {
		c.Log = &audittest.Memory{}
		cfg.Audit = c.Log
	}
	c.Dispatcher = agent.NewDispatcher(cfg)
	// Cleanups run last-in first-out: the dispatcher closes before the
	// tabs close and the conversation goes.
	t.Cleanup(c.Dispatcher.Close)
	return c
}

// AddConversation registers a conversation named name (not selected, no
// dispatcher) whose tabs close and which is removed at t's cleanup.
func (s *Stack) AddConversation(t testing.TB, name string) consent.ConversationID {
	id := consent.ConversationID(fmt.Sprintf("%s-%d", name, convSeq.Add(1)))
	s.Engine.AddConversation(id, name)
	t.Cleanup(func() {
		s.CloseTabs(id)
		s.Engine.RemoveConversation(id)
	})
	return id
}

// CloseTabs closes every tab of conv.
func (s *Stack) CloseTabs(conv consent.ConversationID) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, tab := range s.Browser.Tabs(conv) {
		_ = s.Browser.CloseTab(ctx, conv, tab.ID)
	}
}

// WaitState waits, on the engine's change signal and never a clock, until
// pred holds for its state, and returns that state. The 15 s limit only
// keeps a broken test from hanging; the failure names what was awaited and
// the conversations there were.
func WaitState(t testing.TB, eng *consent.Engine, what string, pred func(consent.State) bool) consent.State {
	t.Helper()
	ch, stop := eng.Changes()
	defer stop()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	for {
		st := eng.Snapshot()
		if pred(st) {
			return st
		}
		select {
		case <-ch:
		case <-ctx.Done():
			var convs []string
			for _, c := range st.Conversations {
				convs = append(convs, string(c.ID)+" "+c.Name)
			}
			t.Fatalf("timed out waiting for %s; conversations: %q", what, convs)
		}
	}
}
