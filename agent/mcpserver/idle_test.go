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

// rawSession opens a stateful session by hand and makes one browser_tabs
// call on it, as a client would before dying without DELETE. It returns
// the session id and the call's conversation.
func rawSession(t *testing.T, ts *testServer) (string, consent.ConversationID) {
	t.Helper()
	status, hdr, body := rawRequest{Secret: ts.secret, Body: rpcBody(t, "", "initialize", map[string]any{
		"protocolVersion": statefulVersion, "clientInfo": map[string]any{"name": "doomed", "version": "1.0"}, "capabilities": map[string]any{},
	})}.do(t, ts.url)
	id := hdr.Get("Mcp-Session-Id")
	if status != http.StatusOK || id == "" {
		t.Fatalf("initialize: status %d, session %q: %s", status, id, body)
	}
	if status, _, body := (rawRequest{Secret: ts.secret, Session: id, Version: statefulVersion,
		Body: []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)}).do(t, ts.url); status != http.StatusAccepted {
		t.Fatalf("initialized: status %d: %s", status, body)
	}
	n := len(ts.surface.Calls())
	if status, _, body := (rawRequest{Secret: ts.secret, Session: id, Version: statefulVersion,
		Body: rpcBody(t, "", "tools/call", map[string]any{"name": "browser_tabs"})}).do(t, ts.url); status != http.StatusOK {
		t.Fatalf("tools/call: status %d: %s", status, body)
	}
	calls := ts.surface.Calls()
	if len(calls) != n+1 {
		t.Fatalf("the call did not reach the Surface")
	}
	return id, calls[n].Conv
}

// TestIdleSessionEndsItsConversation: a stateful client that dies without
// DELETE leaves a session nobody will end; the idle timeout ends it, and
// with it the conversation (its tabs go to the operator), and the audit
// says why.
//
// The timeouts here are a second, not less: the requests that set a
// session up must not idle it out on a loaded machine.
func TestIdleSessionEndsItsConversation(t *testing.T) {
	ts := startServerWith(t, func(c *Config) { c.SessionIdleTimeout = time.Second })
	id, conv := rawSession(t, ts)
	stacktest.WaitState(t, ts.engine, "conversation registered", hasConv(conv))

	// Nothing more is sent: the session must end on its own.
	stacktest.WaitState(t, ts.engine, "idle conversation removed", func(st consent.State) bool { return !hasConv(conv)(st) })
	rec := waitSessionEnd(t, ts, conv)
	if !strings.Contains(rec.Note, "no request for 1s") {
		t.Errorf("session end audited as %q, want the idle timeout named", rec.Note)
	}

	before := len(ts.surface.Calls())
	status, _, body := rawRequest{Secret: ts.secret, Session: id, Version: statefulVersion,
		Body: rpcBody(t, "", "tools/call", map[string]any{"name": "browser_tabs"})}.do(t, ts.url)
	if status != http.StatusNotFound {
		t.Errorf("call on the idled-out session: status %d (%s), want 404", status, body)
	}
	if after := len(ts.surface.Calls()); after != before {
		t.Errorf("a call on the idled-out session reached the Surface")
	}
}

// TestCallInFlightKeepsSessionAlive: a call waiting (on the operator's
// review, say) is not idleness; the session idles out only once the call
// has answered.
func TestCallInFlightKeepsSessionAlive(t *testing.T) {
	const idle = time.Second
	ts := startServerWith(t, func(c *Config) { c.SessionIdleTimeout = idle })
	ts.surface.Block("browser_act")
	cs := stacktest.Connect(t, ts.url, ts.secret, statefulVersion, "patient")
	done := make(chan error, 1)
	go func() {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "browser_act",
			Arguments: map[string]any{"observationId": "obs-1", "action": map[string]any{"type": "click", "ref": "e1"}}})
		if err == nil && res.IsError {
			err = errNoIdentity("the call failed")
		}
		done <- err
	}()
	conv := <-ts.surface.started
	// No signal says "the timer did not fire": let several timeouts pass.
	<-time.After(3 * idle)
	if !hasConv(conv)(ts.engine.Snapshot()) {
		t.Fatalf("the session idled out while a call was in flight")
	}
	close(ts.surface.release)
	if err := <-done; err != nil {
		t.Fatalf("the waiting call did not answer normally: %v", err)
	}
	stacktest.WaitState(t, ts.engine, "conversation removed once idle", func(st consent.State) bool { return !hasConv(conv)(st) })
}

// TestDeleteIsAuditedAsTheClients: an explicit close is not reported as a
// timeout.
func TestDeleteIsAuditedAsTheClients(t *testing.T) {
	ts := startServer(t)
	cs := stacktest.Connect(t, ts.url, ts.secret, statefulVersion, "tidy")
	stacktest.CallTool(t, cs, "browser_tabs", nil)
	conv := ts.surface.Calls()[0].Conv
	if err := cs.Close(); err != nil {
		t.Fatal(err)
	}
	rec := waitSessionEnd(t, ts, conv)
	if !strings.Contains(rec.Note, "closed by the client") {
		t.Errorf("DELETE audited as %q", rec.Note)
	}
}
