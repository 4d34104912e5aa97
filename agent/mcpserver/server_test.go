package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tabwarden/tabwarden/agent"
	"github.com/tabwarden/tabwarden/consent"
	"github.com/tabwarden/tabwarden/consent/audit"
	"github.com/tabwarden/tabwarden/consent/errcode"
	"github.com/tabwarden/tabwarden/internal/stacktest"
)

var bothVersions = []string{sessionlessVersion, statefulVersion}

func TestListToolsPublishesSpecsWithSchemasAndHints(t *testing.T) {
	ts := startServer(t)
	readOnly := map[string]bool{"browser_tabs": true, "browser_observe": true, "browser_verify": true, "webmcp_list_tools": true}
	for _, v := range bothVersions {
		t.Run(v, func(t *testing.T) {
			cs := stacktest.Connect(t, ts.url, ts.secret, v, "lister")
			res, err := cs.ListTools(context.Background(), nil)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, tool := range res.Tools {
				names = append(names, tool.Name)
				schema, _ := tool.InputSchema.(map[string]any)
				if schema["type"] != "object" {
					t.Errorf("%s: input schema %v is not an object schema", tool.Name, tool.InputSchema)
				}
				if tool.Description == "" || tool.Title == "" {
					t.Errorf("%s: missing title or description", tool.Name)
				}
				if tool.Annotations == nil {
					t.Fatalf("%s: no annotations", tool.Name)
				}
				if tool.Annotations.ReadOnlyHint != readOnly[tool.Name] {
					t.Errorf("%s: readOnlyHint = %v, want %v", tool.Name, tool.Annotations.ReadOnlyHint, readOnly[tool.Name])
				}
			}
			var want []string
			for _, s := range agent.Default.Tools {
				want = append(want, s.Name)
			}
			slices.Sort(names)
			slices.Sort(want)
			if !slices.Equal(names, want) {
				t.Fatalf("tools = %v, want %v", names, want)
			}
		})
	}
	if n := len(ts.surface.Calls()); n != 0 {
		t.Fatalf("listing tools reached the Surface %d times", n)
	}
}

func TestCallTabsCarriesResultAndConversation(t *testing.T) {
	ts := startServer(t)
	for _, v := range bothVersions {
		t.Run(v, func(t *testing.T) {
			cs := stacktest.Connect(t, ts.url, ts.secret, v, "claude-code")
			res := stacktest.CallTool(t, cs, "browser_tabs", nil)
			if res.IsError {
				t.Fatalf("isError on success: %+v", res)
			}
			want := cannedResult("browser_tabs", nil)
			if len(res.Content) != 1 {
				t.Fatalf("content = %d blocks, want 1 text block", len(res.Content))
			}
			text, ok := res.Content[0].(*mcp.TextContent)
			if !ok || text.Text != want.JSON() {
				t.Fatalf("text content = %#v, want compact %s", res.Content[0], want.JSON())
			}
			if strings.Contains(text.Text, "\n") {
				t.Fatalf("text content is not compact: %q", text.Text)
			}
			got, _ := json.Marshal(res.StructuredContent)
			if !bytes.Equal(got, []byte(want.JSON())) {
				t.Fatalf("structuredContent = %s, want %s", got, want.JSON())
			}

			calls := ts.surface.Calls()
			last := calls[len(calls)-1]
			if last.Tool != "browser_tabs" || last.Args != "{}" {
				t.Fatalf("surface saw %+v, want browser_tabs with {}", last)
			}
			st := stacktest.WaitState(t, ts.engine, "conversation registered", hasConv(last.Conv))
			name := convNames(st)[last.Conv]
			parts := strings.Split(name, " · ")
			if len(parts) != 3 || parts[0] != DefaultTokenName || parts[1] != "claude-code" || len(parts[2]) != 6 {
				t.Fatalf("conversation name %q, want default · claude-code · <short id>", name)
			}
			rec, err := ts.audit.WaitFor(context.Background(), func(r audit.Record) bool {
				return r.Kind == audit.KindToolCall && r.Conversation == string(last.Conv)
			})
			if err != nil || rec.Tool != "browser_tabs" || rec.Code != "" || rec.Tab != "" {
				t.Fatalf("audit record %+v (%v)", rec, err)
			}
		})
	}
}

func TestConversationIdentity(t *testing.T) {
	ts := startServer(t)
	other, err := ts.MintToken("second")
	if err != nil {
		t.Fatal(err)
	}
	convOf := func(cs *mcp.ClientSession) consent.ConversationID {
		t.Helper()
		n := len(ts.surface.Calls())
		stacktest.CallTool(t, cs, "browser_tabs", nil)
		calls := ts.surface.Calls()
		if len(calls) != n+1 {
			t.Fatalf("surface calls %d → %d, want one more", n, len(calls))
		}
		return calls[n].Conv
	}

	t.Run("different tokens, different conversations", func(t *testing.T) {
		a := convOf(stacktest.Connect(t, ts.url, ts.secret, sessionlessVersion, "a"))
		b := convOf(stacktest.Connect(t, ts.url, other.Secret, sessionlessVersion, "b"))
		if a == b {
			t.Fatalf("two tokens share conversation %s", a)
		}
	})
	t.Run("sessionless calls on one token share one", func(t *testing.T) {
		c1 := stacktest.Connect(t, ts.url, ts.secret, sessionlessVersion, "a")
		c2 := stacktest.Connect(t, ts.url, ts.secret, sessionlessVersion, "a-again")
		first, second, third := convOf(c1), convOf(c1), convOf(c2)
		if first != second || first != third {
			t.Fatalf("sessionless calls on one token got %s, %s, %s", first, second, third)
		}
	})
	t.Run("two stateful sessions on one token, two conversations", func(t *testing.T) {
		s1 := stacktest.Connect(t, ts.url, ts.secret, statefulVersion, "s1")
		s2 := stacktest.Connect(t, ts.url, ts.secret, statefulVersion, "s2")
		if s1.ID() == "" || s2.ID() == "" || s1.ID() == s2.ID() {
			t.Fatalf("session ids %q, %q", s1.ID(), s2.ID())
		}
		a1, a2, b := convOf(s1), convOf(s1), convOf(s2)
		if a1 != a2 {
			t.Fatalf("one session got two conversations %s, %s", a1, a2)
		}
		if a1 == b {
			t.Fatalf("two sessions share conversation %s", a1)
		}
		sessionless := convOf(stacktest.Connect(t, ts.url, ts.secret, sessionlessVersion, "x"))
		if sessionless == a1 || sessionless == b {
			t.Fatalf("a session shares the token's sessionless conversation %s", sessionless)
		}
	})
}

func TestSessionEndRemovesConversationAndLaterCallsNeverDispatch(t *testing.T) {
	ts := startServer(t)
	cs := stacktest.Connect(t, ts.url, ts.secret, statefulVersion, "short-lived")
	stacktest.CallTool(t, cs, "browser_tabs", nil)
	conv := ts.surface.Calls()[0].Conv
	stacktest.WaitState(t, ts.engine, "conversation registered", hasConv(conv))
	sessionID := cs.ID()

	if err := cs.Close(); err != nil { // DELETE
		t.Fatal(err)
	}
	stacktest.WaitState(t, ts.engine, "conversation removed", func(st consent.State) bool { return !hasConv(conv)(st) })
	waitSessionEnd(t, ts, conv)

	before := len(ts.surface.Calls())
	status, _, body := rawRequest{
		Secret:  ts.secret,
		Session: sessionID,
		Body:    rpcBody(t, "", "tools/call", map[string]any{"name": "browser_act", "arguments": map[string]any{"observationId": "obs-1", "action": map[string]any{"type": "click", "ref": "e1"}}}),
	}.do(t, ts.url)
	if status != http.StatusNotFound {
		t.Fatalf("call on an ended session: status %d (%s), want 404", status, body)
	}
	if after := len(ts.surface.Calls()); after != before {
		t.Fatalf("a call after the session ended reached the Surface (%d → %d calls)", before, after)
	}
}

func TestAuthAndRebindingGuards(t *testing.T) {
	ts := startServer(t)
	list := rpcBody(t, sessionlessVersion, "tools/list", nil)
	port := ts.url[strings.LastIndex(ts.url, ":")+1 : strings.LastIndex(ts.url, "/")]
	cases := []struct {
		name   string
		req    rawRequest
		status int
	}{
		{"no token", rawRequest{Version: sessionlessVersion, Body: list}, http.StatusUnauthorized},
		{"wrong token", rawRequest{Secret: "tw_not-a-token", Version: sessionlessVersion, Body: list}, http.StatusUnauthorized},
		{"foreign origin", rawRequest{Secret: ts.secret, Version: sessionlessVersion, Origin: "https://evil.example", Body: list}, http.StatusForbidden},
		{"null origin", rawRequest{Secret: ts.secret, Version: sessionlessVersion, Origin: "null", Body: list}, http.StatusForbidden},
		{"origin on another port", rawRequest{Secret: ts.secret, Version: sessionlessVersion, Origin: "http://127.0.0.1:1", Body: list}, http.StatusForbidden},
		{"rebound host", rawRequest{Secret: ts.secret, Version: sessionlessVersion, Host: "evil.example:" + port, Body: list}, http.StatusForbidden},
		{"host on another port", rawRequest{Secret: ts.secret, Version: sessionlessVersion, Host: "localhost:1", Body: list}, http.StatusForbidden},
		{"foreign origin without token", rawRequest{Version: sessionlessVersion, Origin: "https://evil.example", Body: list}, http.StatusForbidden},
		{"own origin", rawRequest{Secret: ts.secret, Version: sessionlessVersion, Origin: "http://localhost:" + port, Body: list}, http.StatusOK},
		{"localhost host", rawRequest{Secret: ts.secret, Version: sessionlessVersion, Host: "localhost:" + port, Body: list}, http.StatusOK},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			status, h, body := c.req.do(t, ts.url)
			if status != c.status {
				t.Fatalf("status %d (%s), want %d", status, body, c.status)
			}
			if status == http.StatusUnauthorized && !strings.HasPrefix(h.Get("WWW-Authenticate"), "Bearer") {
				t.Fatalf("401 without a Bearer WWW-Authenticate challenge: %q", h.Get("WWW-Authenticate"))
			}
			if status == http.StatusOK && !bytes.Contains(body, []byte(`"browser_tabs"`)) {
				t.Fatalf("tools/list answered %s", body)
			}
		})
	}
	if n := len(ts.surface.Calls()); n != 0 {
		t.Fatalf("guard tests reached the Surface %d times", n)
	}
}

func TestRevokeTokenEndsItsConversationsAndGets401(t *testing.T) {
	for _, v := range bothVersions {
		t.Run(v, func(t *testing.T) {
			ts := startServer(t)
			tok, err := ts.MintToken("doomed")
			if err != nil {
				t.Fatal(err)
			}
			keep := stacktest.Connect(t, ts.url, ts.secret, v, "survivor")
			stacktest.CallTool(t, keep, "browser_tabs", nil)
			survivor := ts.surface.Calls()[0].Conv

			cs := stacktest.Connect(t, ts.url, tok.Secret, v, "doomed-client")
			ts.surface.Block("browser_act")
			type outcome struct {
				res *mcp.CallToolResult
				err error
			}
			done := make(chan outcome, 1)
			go func() {
				res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "browser_act",
					Arguments: map[string]any{"observationId": "obs-1", "action": map[string]any{"type": "click", "ref": "e1"}}})
				done <- outcome{res, err}
			}()
			conv := <-ts.surface.started
			stacktest.WaitState(t, ts.engine, "conversation registered", hasConv(conv))

			if err := ts.RevokeToken("doomed"); err != nil {
				t.Fatal(err)
			}
			if got := <-ts.surface.ended; got != conv {
				t.Fatalf("cancelled call of %s, want %s", got, conv)
			}
			// Sessionless or stateful, the cancelled call answers before
			// its session closes: an error result, no bare transport error.
			if o := <-done; o.err != nil || !o.res.IsError {
				t.Fatalf("the running call's answer: %v %+v, want an error result", o.err, o.res)
			}
			st := stacktest.WaitState(t, ts.engine, "revoked conversation removed", func(st consent.State) bool { return !hasConv(conv)(st) })
			if !hasConv(survivor)(st) {
				t.Fatalf("revoking one token removed another's conversation")
			}

			status, _, _ := rawRequest{Secret: tok.Secret, Version: sessionlessVersion, Body: rpcBody(t, sessionlessVersion, "tools/call", map[string]any{"name": "browser_tabs"})}.do(t, ts.url)
			if status != http.StatusUnauthorized {
				t.Fatalf("revoked token: status %d, want 401", status)
			}
			if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "browser_tabs"}); err == nil {
				t.Fatalf("the revoked client's next call succeeded")
			}
			// Revoked at the console's terminal (X in the n panel): by
			// "local", as its decisions are, and said in the activity log.
			if _, err := ts.audit.WaitFor(context.Background(), func(r audit.Record) bool {
				return r.Kind == audit.KindRevoke && strings.Contains(r.Note, "doomed") && r.Operator == "local"
			}); err != nil {
				t.Fatal(err)
			}
			stacktest.WaitState(t, ts.engine, "the revocation in the activity log", func(st consent.State) bool {
				for _, a := range st.Activity {
					if strings.Contains(a.Text, "agent token doomed revoked by local") {
						return true
					}
				}
				return false
			})
			if err := ts.RevokeToken("doomed"); !errors.Is(err, ErrUnknownToken) {
				t.Fatalf("second revoke: %v, want ErrUnknownToken", err)
			}
		})
	}
}

func TestImageAndErrorResults(t *testing.T) {
	ts := startServer(t)
	cs := stacktest.Connect(t, ts.url, ts.secret, sessionlessVersion, "viewer")
	res := stacktest.CallTool(t, cs, "browser_observe", map[string]any{"includeImage": true})
	if len(res.Content) != 2 {
		t.Fatalf("observe with image: %d content blocks, want text + image", len(res.Content))
	}
	img, ok := res.Content[1].(*mcp.ImageContent)
	if !ok || img.MIMEType != "image/png" || !bytes.Equal(img.Data, fakePNG) {
		t.Fatalf("image block = %#v", res.Content[1])
	}

	res = stacktest.CallTool(t, cs, "browser_act", map[string]any{"observationId": "obs-used", "action": map[string]any{"type": "click", "ref": "e1"}})
	if !res.IsError {
		t.Fatalf("a failure envelope arrived without isError")
	}
	obj, _ := res.StructuredContent.(map[string]any)
	if obj["code"] != "stale_observation" || obj["ok"] != false {
		t.Fatalf("structuredContent = %v", obj)
	}
	rec, err := ts.audit.WaitFor(context.Background(), func(r audit.Record) bool {
		return r.Kind == audit.KindToolCall && r.Tool == "browser_act"
	})
	if err != nil || rec.Code != "stale_observation" || !strings.Contains(rec.Input, "observationId") {
		t.Fatalf("audit of a failed act: %+v (%v)", rec, err)
	}
}

func TestAuditNeverHoldsInputValues(t *testing.T) {
	ts := startServer(t)
	cs := stacktest.Connect(t, ts.url, ts.secret, sessionlessVersion, "typist")
	secretText := "hunter2-typed-text"
	stacktest.CallTool(t, cs, "browser_act", map[string]any{"observationId": "obs-1", "action": map[string]any{"type": "fill", "ref": "e2", "text": secretText}})
	stacktest.CallTool(t, cs, "webmcp_call_tool", map[string]any{"toolId": "tool-1", "input": map[string]any{"apiKey": "sk-live-123"}})
	for _, r := range ts.audit.Records() {
		b, _ := json.Marshal(r)
		if bytes.Contains(b, []byte(secretText)) || bytes.Contains(b, []byte("sk-live-123")) || bytes.Contains(b, []byte(ts.secret)) {
			t.Fatalf("audit record holds a value: %s", b)
		}
	}
}

func TestNoIdentityIsMissingSessionWithoutDispatch(t *testing.T) {
	ts := startServer(t)
	h := ts.toolHandler(agent.Default.Tool("browser_tabs"))
	res, err := h(context.Background(), &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "browser_tabs"}})
	if err != nil {
		t.Fatal(err)
	}
	// What a client reads: the structured content as it goes on the wire.
	var obj map[string]any
	if b, err := json.Marshal(res.StructuredContent); err != nil || json.Unmarshal(b, &obj) != nil {
		t.Fatalf("structured content does not encode: %v %v", err, res.StructuredContent)
	}
	if !res.IsError || obj["code"] != string(errcode.MissingSession) || obj["dispatched"] != false || obj["next"] != "list_tabs" {
		t.Fatalf("no-identity call: %+v", obj)
	}
	for _, k := range []string{"ok", "code", "error", "dispatched", "mayHaveChangedState", "retrySafe", "next", "trust"} {
		if _, ok := obj[k]; !ok {
			t.Errorf("envelope lacks %q", k)
		}
	}
	if n := len(ts.surface.Calls()); n != 0 {
		t.Fatalf("a call without identity reached the Surface")
	}
}

func TestTokens(t *testing.T) {
	ts := startServer(t)
	name, line, err := ts.MintNamed()
	if err != nil || name != "agent-2" {
		t.Fatalf("MintNamed = %q, %v", name, err)
	}
	prefix := "claude mcp add --transport http tabwarden " + ts.url + ` --header "Authorization: Bearer tw_`
	if !strings.HasPrefix(line, prefix) || !strings.HasSuffix(line, `"`) {
		t.Fatalf("config line %q", line)
	}
	if name, _, _ := ts.MintNamed(); name != "agent-3" {
		t.Fatalf("second MintNamed = %q, want agent-3", name)
	}
	if _, err := ts.MintToken("agent-2"); !errors.Is(err, ErrTokenExists) {
		t.Fatalf("duplicate name: %v", err)
	}
	if _, err := ts.MintToken("bad name"); !errors.Is(err, ErrTokenName) {
		t.Fatalf("bad name: %v", err)
	}
	if got := ts.Tokens(); !slices.Equal(got, []string{"agent-2", "agent-3", "default"}) {
		t.Fatalf("Tokens = %v", got)
	}
	a, _ := ts.MintToken("x")
	b, _ := ts.MintToken("y")
	if a.Secret == b.Secret || len(a.Secret) != len("tw_")+43 {
		t.Fatalf("secrets %q %q: want distinct tw_ + 43 base64url chars (32 bytes)", a.Secret, b.Secret)
	}
}

func TestListenIsLoopbackOnly(t *testing.T) {
	eng := consent.New(consent.Config{})
	defer eng.Close()
	for _, addr := range []string{"0.0.0.0:0", "192.168.1.2:0", ":0", "example.com:0", "[::1]:0", "127.0.0.1"} {
		if _, err := New(Config{Surface: newFakeSurface(), Engine: eng, Listen: addr}); err == nil {
			t.Errorf("listen %q accepted", addr)
		}
	}
	s, err := New(Config{Surface: newFakeSurface(), Engine: eng, Listen: "localhost:0"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	url, err := s.Start(context.Background())
	if err != nil || !strings.HasPrefix(url, "http://127.0.0.1:") || !strings.HasSuffix(url, "/mcp") {
		t.Fatalf("Start on localhost:0 = %q, %v", url, err)
	}
}

func TestCloseEndsConversations(t *testing.T) {
	ts := startServer(t)
	cs := stacktest.Connect(t, ts.url, ts.secret, statefulVersion, "to-close")
	stacktest.CallTool(t, cs, "browser_tabs", nil)
	conv := ts.surface.Calls()[0].Conv
	stacktest.WaitState(t, ts.engine, "conversation registered", hasConv(conv))
	ts.Close()
	stacktest.WaitState(t, ts.engine, "conversation removed at close", func(st consent.State) bool { return len(st.Conversations) == 0 })
	if _, err := ts.MintToken("late"); !errors.Is(err, ErrClosed) {
		t.Fatalf("mint after close: %v", err)
	}
}

// A session id is not a credential: another token presenting it is refused
// and nothing reaches the Surface (design.md §3: identity is token + session).
func TestSessionBoundToItsToken(t *testing.T) {
	ts := startServer(t)
	other, err := ts.MintToken("other")
	if err != nil {
		t.Fatal(err)
	}
	cs := stacktest.Connect(t, ts.url, ts.secret, statefulVersion, "owner")
	status, _, body := rawRequest{
		Secret:  other.Secret,
		Session: cs.ID(),
		Body:    rpcBody(t, "", "tools/call", map[string]any{"name": "browser_tabs"}),
	}.do(t, ts.url)
	if status != http.StatusForbidden {
		t.Fatalf("another token on the session: status %d (%s), want 403", status, body)
	}
	if n := len(ts.surface.Calls()); n != 0 {
		t.Fatalf("a hijacked session reached the Surface %d times", n)
	}
}

// With agent.Dispatcher the Surface writes each call's record; the server
// must not write a second one.
func TestToolCallAuditLeftToTheSurfaceByDefault(t *testing.T) {
	// The zero value, which the other tests' server turns on.
	ts := startServerWith(t, func(c *Config) { c.AuditToolCalls = false })
	cs := stacktest.Connect(t, ts.url, ts.secret, sessionlessVersion, "quiet")
	stacktest.CallTool(t, cs, "browser_tabs", nil)
	var kinds []audit.Kind
	for _, r := range ts.audit.Records() {
		kinds = append(kinds, r.Kind)
	}
	if slices.Contains(kinds, audit.KindToolCall) || !slices.Contains(kinds, audit.KindSession) {
		t.Fatalf("audit kinds %v: want the session start and no tool_call record", kinds)
	}
}

func TestRequestBodyCap(t *testing.T) {
	ts := startServerWith(t, func(c *Config) { c.MaxRequestBytes = 2048 })
	big := rpcBody(t, sessionlessVersion, "tools/call", map[string]any{"name": "webmcp_call_tool",
		"arguments": map[string]any{"toolId": "tool-1", "input": map[string]any{"blob": strings.Repeat("x", 4096)}}})
	status, _, _ := rawRequest{Secret: ts.secret, Version: sessionlessVersion, Body: big}.do(t, ts.url)
	if status != http.StatusRequestEntityTooLarge {
		t.Fatalf("oversized request: status %d, want 413", status)
	}
	if n := len(ts.surface.Calls()); n != 0 {
		t.Fatalf("an oversized request reached the Surface")
	}
}

// A token minted at the console's terminal is recorded as its revocation
// is: in the audit (kind mint, by local) and the activity log, by name,
// never with its secret (the eleventh walk found mints missing from the
// audit).
func TestMintIsAudited(t *testing.T) {
	ts := startServer(t)
	tok, err := ts.MintAtConsole("helper")
	if err != nil {
		t.Fatal(err)
	}
	rec, err := ts.audit.WaitFor(context.Background(), func(r audit.Record) bool { return r.Kind == audit.KindMint })
	if err != nil {
		t.Fatal(err)
	}
	if rec.Operator != "local" || !strings.Contains(rec.Note, "agent token helper minted") {
		t.Errorf("mint record %+v", rec)
	}
	// This test server keeps no token store, as the demo's console: the
	// line says the token is not kept.
	if !strings.Contains(rec.Note, "not kept") {
		t.Errorf("a mint on a console without a token store does not say it is not kept: %q", rec.Note)
	}
	for _, r := range ts.audit.Records() {
		if strings.Contains(fmt.Sprintf("%+v", r), tok.Secret) {
			t.Fatalf("the audit holds the token's secret: %+v", r)
		}
	}
	stacktest.WaitState(t, ts.engine, "the mint in the activity log", func(st consent.State) bool {
		for _, a := range st.Activity {
			if strings.Contains(a.Text, "agent token 'helper' minted") && !strings.Contains(a.Text, tok.Secret) {
				return true
			}
		}
		return false
	})
}
