package mcpserver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/tabwarden/tabwarden/agent"
	"github.com/tabwarden/tabwarden/consent"
	"github.com/tabwarden/tabwarden/consent/audit"
	"github.com/tabwarden/tabwarden/consent/audit/audittest"
)

// statefulVersion is the protocol that keeps an MCP session;
// sessionlessVersion (server.go) the one that does not.
const statefulVersion = "2025-11-25"

// surfaceCall is one call the fake Surface saw.
type surfaceCall struct {
	Conv consent.ConversationID
	Tool string
	Args string
}

// fakeSurface answers every tool with a canned design.md §5 result and records
// who called. Tools listed in block wait for their context to end (or for
// release to close), after announcing the conversation on started.
type fakeSurface struct {
	mu      sync.Mutex
	calls   []surfaceCall
	block   map[string]bool
	started chan consent.ConversationID
	ended   chan consent.ConversationID // a blocked call's context ended
	release chan struct{}               // closing it lets blocked calls answer normally
}

func newFakeSurface() *fakeSurface {
	return &fakeSurface{block: map[string]bool{}, started: make(chan consent.ConversationID, 16), ended: make(chan consent.ConversationID, 16), release: make(chan struct{})}
}

func (f *fakeSurface) Call(ctx context.Context, conv consent.ConversationID, tool string, args json.RawMessage) agent.Result {
	f.mu.Lock()
	f.calls = append(f.calls, surfaceCall{Conv: conv, Tool: tool, Args: string(args)})
	block := f.block[tool]
	f.mu.Unlock()
	if block {
		f.started <- conv
		select {
		case <-ctx.Done():
		case <-f.release:
			return cannedResult(tool, args)
		}
		f.ended <- conv
		return envelope("canceled", "the operation was cancelled", true, "observe_before_retry")
	}
	return cannedResult(tool, args)
}

func (f *fakeSurface) Calls() []surfaceCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]surfaceCall(nil), f.calls...)
}

func (f *fakeSurface) Block(tool string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.block[tool] = true
}

// fakePNG stands for a screenshot; the server passes bytes through unread.
var fakePNG = []byte("\x89PNG\r\n\x1a\nfake")

func envelope(code, msg string, dispatched bool, next string) agent.Result {
	return agent.Result{IsError: true, Object: map[string]any{
		"ok": false, "code": code, "error": msg, "dispatched": dispatched,
		"mayHaveChangedState": dispatched, "retrySafe": false, "next": next,
		"trust": agent.TrustUntrusted,
	}}
}

// cannedResult gives each tool a result of the design.md §5 shape.
func cannedResult(tool string, args json.RawMessage) agent.Result {
	ok := func(fields map[string]any) agent.Result {
		fields["ok"] = true
		return agent.Result{Object: fields}
	}
	switch tool {
	case "browser_tabs":
		return ok(map[string]any{"paused": false, "trust": agent.TrustUntrusted, "tabs": []any{
			map[string]any{"tabId": "tab-1", "url": "https://shop.test/", "title": "Shop", "visible": true, "status": "idle", "operation": ""},
		}})
	case "browser_open":
		return ok(map[string]any{"tabId": "tab-1", "url": "https://shop.test/", "visible": true, "next": "observe"})
	case "browser_navigate":
		return ok(map[string]any{"outcome": "navigation_finished", "url": "https://shop.test/cart", "next": "observe"})
	case "browser_observe":
		r := ok(map[string]any{"observationId": "obs-1", "tabId": "tab-1", "url": "https://shop.test/", "title": "Shop",
			"elements": "e1 button \"Add to cart\"\ne2 textbox \"Qty\" value=\"1\"", "trust": agent.TrustUntrusted})
		r.Image = fakePNG
		return r
	case "browser_act":
		if strings.Contains(string(args), "obs-used") {
			return envelope("stale_observation", "observation obs-used was used by an earlier action; observe again", false, "observe_before_retry")
		}
		return ok(map[string]any{"dispatched": true, "outcome": "not_yet_verified", "next": "observe"})
	case "browser_verify":
		return ok(map[string]any{"verified": true, "evidence": "text found: \"Saved 1\"", "trust": agent.TrustUntrusted})
	case "browser_handoff":
		return ok(map[string]any{"status": "paused", "next": "user_resume"})
	case "browser_close":
		return ok(map[string]any{"tabId": "tab-1", "closed": true})
	case "webmcp_list_tools":
		return ok(map[string]any{"trust": agent.TrustUntrusted, "support": map[string]any{"native": true},
			"tools": []any{map[string]any{"toolId": "tool-1", "name": "save_draft", "title": "Save draft", "description": "Saves a draft",
				"inputSchema": map[string]any{"type": "object"}, "annotations": map[string]any{}, "origin": "https://shop.test"}},
			"rejectedTools": []any{}})
	case "webmcp_call_tool":
		return ok(map[string]any{"outcome": "callback_returned_verify_outcome", "result": map[string]any{"saved": 1}, "trust": agent.TrustUntrusted})
	}
	return envelope("browser_operation_failed", "unknown tool "+tool, false, "list_tabs")
}

// testServer is a started Server with a real engine and an in-memory audit.
type testServer struct {
	*Server
	url     string
	secret  string // the default token
	engine  *consent.Engine
	audit   *audittest.Memory
	surface *fakeSurface
}

func startServer(t *testing.T) *testServer { return startServerWith(t, nil) }

// startServerWith starts a server whose Config tune may adjust first.
func startServerWith(t *testing.T, tune func(*Config)) *testServer {
	t.Helper()
	eng := consent.New(consent.Config{})
	t.Cleanup(eng.Close)
	mem := &audittest.Memory{}
	fs := newFakeSurface()
	cfg := Config{Surface: fs, Engine: eng, Audit: mem, AuditToolCalls: true, Version: "test"}
	if tune != nil {
		tune(&cfg)
	}
	s, url := serve(t, cfg)
	return &testServer{Server: s, url: url, secret: s.DefaultToken().Secret, engine: eng, audit: mem, surface: fs}
}

// serve starts a server from cfg and returns it with its endpoint; it
// closes at t's cleanup, before what it was given (cleanups run last-in
// first-out).
func serve(t *testing.T, cfg Config) (*Server, string) {
	t.Helper()
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	url, err := s.Start(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s, url
}

// waitSessionEnd waits for the audit record that ends conv's session and
// returns it, so a test can check why the session ended.
func waitSessionEnd(t *testing.T, ts *testServer, conv consent.ConversationID) audit.Record {
	t.Helper()
	rec, err := ts.audit.WaitFor(context.Background(), func(r audit.Record) bool {
		return r.Kind == audit.KindSession && r.Conversation == string(conv) && strings.HasPrefix(r.Note, "ended")
	})
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

func hasConv(id consent.ConversationID) func(consent.State) bool {
	return func(st consent.State) bool {
		for _, c := range st.Conversations {
			if c.ID == id {
				return true
			}
		}
		return false
	}
}

func convNames(st consent.State) map[consent.ConversationID]string {
	m := map[consent.ConversationID]string{}
	for _, c := range st.Conversations {
		m[c.ID] = c.Name
	}
	return m
}

// rawRequest is one hand-built HTTP request to the endpoint.
type rawRequest struct {
	Secret  string
	Version string // Mcp-Protocol-Version header; "" for none
	Session string // Mcp-Session-Id header
	Host    string
	Origin  string
	Body    []byte
}

// rpcBody builds a JSON-RPC call; for the sessionless protocol it adds the
// per-request _meta the protocol requires.
func rpcBody(t *testing.T, version, method string, params map[string]any) []byte {
	t.Helper()
	if params == nil {
		params = map[string]any{}
	}
	if version == sessionlessVersion {
		params["_meta"] = map[string]any{
			"io.modelcontextprotocol/protocolVersion":    version,
			"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "raw-client", "version": "1.0"},
			"io.modelcontextprotocol/clientCapabilities": map[string]any{},
		}
	}
	b, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// do sends r and returns the status, the headers and the JSON-RPC message
// of the body (unwrapped from SSE when streamed).
func (r rawRequest) do(t *testing.T, url string) (int, http.Header, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url, bytes.NewReader(r.Body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if r.Secret != "" {
		req.Header.Set("Authorization", "Bearer "+r.Secret)
	}
	if r.Version != "" {
		req.Header.Set("Mcp-Protocol-Version", r.Version)
		var m struct {
			Method string `json:"method"`
			Params struct {
				Name string `json:"name"`
			} `json:"params"`
		}
		if json.Unmarshal(r.Body, &m) == nil {
			req.Header.Set("Mcp-Method", m.Method)
			if m.Params.Name != "" {
				req.Header.Set("Mcp-Name", m.Params.Name)
			}
		}
	}
	if r.Session != "" {
		req.Header.Set("Mcp-Session-Id", r.Session)
	}
	if r.Host != "" {
		req.Host = r.Host
	}
	if r.Origin != "" {
		req.Header.Set("Origin", r.Origin)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		body = sseData(body)
	}
	return resp.StatusCode, resp.Header, body
}

// sseData returns the data of the first SSE event that carries any.
func sseData(b []byte) []byte {
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 64*1024), 4<<20)
	var data []byte
	for sc.Scan() {
		line := sc.Text()
		if rest, ok := strings.CutPrefix(line, "data:"); ok {
			data = append(data, strings.TrimPrefix(rest, " ")...)
			continue
		}
		if line == "" && len(data) > 0 {
			return data
		}
	}
	return data
}
