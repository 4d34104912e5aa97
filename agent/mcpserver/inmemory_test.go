package mcpserver

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tabwarden/tabwarden/consent"
	"github.com/tabwarden/tabwarden/consent/audit"
	"github.com/tabwarden/tabwarden/internal/stacktest"
)

// An in-memory connection is a conversation of its own, through the same
// tool handler as an HTTP agent's: the Surface sees its conversation, the
// audit records it, and closing it ends the conversation.
func TestInMemoryConnectionIsItsOwnConversation(t *testing.T) {
	ts := startServer(t)
	ctx := context.Background()
	im, err := ts.ConnectInMemory(ctx, "builtin", "built-in agent test/model")
	if err != nil {
		t.Fatal(err)
	}
	if im.Conversation() != "" {
		t.Fatal("a conversation exists before the first call")
	}
	http := stacktest.Connect(t, ts.url, ts.secret, sessionlessVersion, "http-agent")

	if _, err := im.Session.CallTool(ctx, &mcp.CallToolParams{Name: "browser_tabs", Arguments: map[string]any{}}); err != nil {
		t.Fatal(err)
	}
	stacktest.CallTool(t, http, "browser_tabs", map[string]any{})
	conv := im.Conversation()
	if conv == "" {
		t.Fatal("no conversation after the first call")
	}
	calls := ts.surface.Calls()
	if len(calls) != 2 || calls[0].Conv != conv || calls[1].Conv == conv {
		t.Fatalf("surface calls %+v; in-memory conversation %s", calls, conv)
	}
	st := stacktest.WaitState(t, ts.engine, "the in-memory conversation", hasConv(conv))
	if name := convNames(st)[conv]; !strings.Contains(name, "builtin") || !strings.Contains(name, "built-in agent") {
		t.Errorf("conversation name %q", name)
	}
	var audited bool
	for _, r := range ts.audit.Records() {
		if r.Kind == audit.KindToolCall && r.Conversation == string(conv) && r.Tool == "browser_tabs" {
			audited = true
		}
	}
	if !audited {
		t.Error("the in-memory call is not in the audit")
	}
	// The name is taken while the connection lives.
	if _, err := ts.ConnectInMemory(ctx, "builtin", "again"); !errors.Is(err, ErrTokenExists) {
		t.Errorf("second connection under the same name: %v", err)
	}

	if err := im.Close(); err != nil {
		t.Fatal(err)
	}
	rec := waitSessionEnd(t, ts, conv)
	if !strings.Contains(rec.Note, "stopped") {
		t.Errorf("end note %q", rec.Note)
	}
	stacktest.WaitState(t, ts.engine, "the conversation gone", func(st consent.State) bool { return !hasConv(conv)(st) })
	// The name is free again, and the old conversation does not come back.
	im2, err := ts.ConnectInMemory(ctx, "builtin", "again")
	if err != nil {
		t.Fatal(err)
	}
	defer im2.Close()
	if _, err := im2.Session.CallTool(ctx, &mcp.CallToolParams{Name: "browser_tabs", Arguments: map[string]any{}}); err != nil {
		t.Fatal(err)
	}
	if c := im2.Conversation(); c == "" || c == conv {
		t.Errorf("new connection's conversation %q (old %q)", c, conv)
	}
}

// Revoking the in-memory token (the operator) ends its conversation.
func TestInMemoryRevoked(t *testing.T) {
	ts := startServer(t)
	ctx := context.Background()
	im, err := ts.ConnectInMemory(ctx, "builtin", "agent")
	if err != nil {
		t.Fatal(err)
	}
	defer im.Close()
	if _, err := im.Session.CallTool(ctx, &mcp.CallToolParams{Name: "browser_tabs", Arguments: map[string]any{}}); err != nil {
		t.Fatal(err)
	}
	conv := im.Conversation()
	if err := ts.RevokeToken("builtin"); err != nil {
		t.Fatal(err)
	}
	waitSessionEnd(t, ts, conv)
	res, err := im.Session.CallTool(ctx, &mcp.CallToolParams{Name: "browser_tabs", Arguments: map[string]any{}})
	if err == nil && (!res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "missing_session")) {
		t.Errorf("a call after revocation was not refused: %+v", res)
	}
}
