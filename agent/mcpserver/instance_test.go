package mcpserver

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tabwarden/tabwarden/consent"
	"github.com/tabwarden/tabwarden/internal/stacktest"
)

// instanceHeader adds the relay's per-process instance id to every request.
type instanceHeader struct {
	id   string
	base http.RoundTripper
}

func (h instanceHeader) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set(InstanceHeader, h.id)
	return h.base.RoundTrip(r)
}

func dialInstance(t *testing.T, url, secret, instance string) *mcp.ClientSession {
	t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "host", Version: "1.0"}, nil)
	tr := &mcp.StreamableClientTransport{Endpoint: url, MaxRetries: -1,
		HTTPClient: &http.Client{Transport: instanceHeader{id: instance, base: stacktest.Bearer{Secret: secret}}}}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cs, err := client.Connect(ctx, tr, &mcp.ClientSessionOptions{ProtocolVersion: sessionlessVersion})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// convOfCall calls browser_tabs on cs and returns the conversation the
// Surface saw it under.
func convOfCall(t *testing.T, ts *testServer, cs *mcp.ClientSession) consent.ConversationID {
	t.Helper()
	n := len(ts.surface.Calls())
	stacktest.CallTool(t, cs, "browser_tabs", nil)
	calls := ts.surface.Calls()
	if len(calls) != n+1 {
		t.Fatal("the call did not reach the Surface")
	}
	return calls[n].Conv
}

// Two sessionless host processes with one token are two conversations
// when each sends its own instance id (the relay does); the same instance
// keeps its conversation across its calls.
func TestSessionlessInstancesAreConversations(t *testing.T) {
	ts := startServer(t)
	a := dialInstance(t, ts.url, ts.secret, "instance-a")
	b := dialInstance(t, ts.url, ts.secret, "instance-b")
	ca, cb := convOfCall(t, ts, a), convOfCall(t, ts, b)
	if ca == cb {
		t.Fatalf("two instances share conversation %s", ca)
	}
	if again := convOfCall(t, ts, a); again != ca {
		t.Fatalf("instance a moved from %s to %s", ca, again)
	}
	// A malformed instance id is no instance: the token's own conversation.
	plain := stacktest.Connect(t, ts.url, ts.secret, sessionlessVersion, "plain")
	odd := dialInstance(t, ts.url, ts.secret, strings.Repeat("x", 65))
	if cp, co := convOfCall(t, ts, plain), convOfCall(t, ts, odd); cp != co || cp == ca || cp == cb {
		t.Fatalf("conversations: plain %s, malformed instance %s, a %s, b %s", cp, co, ca, cb)
	}
}

// A sessionless conversation with no call for the idle time ends like a
// session (its tabs go to the operator), never while a call is in flight;
// its next call starts a new conversation.
func TestSessionlessConversationIdlesOut(t *testing.T) {
	const idle = time.Second
	ts := startServerWith(t, func(c *Config) { c.SessionIdleTimeout = idle })
	ts.surface.Block("browser_act")
	cs := dialInstance(t, ts.url, ts.secret, "idler")
	conv := convOfCall(t, ts, cs)
	stacktest.WaitState(t, ts.engine, "the idle conversation to end", func(st consent.State) bool { return !hasConv(conv)(st) })
	if rec := waitSessionEnd(t, ts, conv); !strings.Contains(rec.Note, "no call for 1s") {
		t.Errorf("end audited as %q, want the idle time named", rec.Note)
	}

	next := convOfCall(t, ts, cs)
	if next == conv {
		t.Fatal("the ended conversation came back")
	}
	done := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "browser_act",
			Arguments: map[string]any{"observationId": "obs-1", "action": map[string]any{"type": "click", "ref": "e1"}}})
		done <- err
	}()
	if got := <-ts.surface.started; got != next {
		t.Fatalf("the act ran under %s, want %s", got, next)
	}
	// No signal says "the timer did not fire": let several timeouts pass.
	<-time.After(3 * idle)
	if !hasConv(next)(ts.engine.Snapshot()) {
		t.Fatal("a sessionless conversation idled out with a call in flight")
	}
	close(ts.surface.release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	stacktest.WaitState(t, ts.engine, "the conversation to end once idle", func(st consent.State) bool { return !hasConv(next)(st) })
}
