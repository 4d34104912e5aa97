package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tabwarden/tabwarden/agent/hosts/fakemodel"
)

// A loopback model provider that speaks the real wire formats (OpenAI chat
// completions, streamed and not; Anthropic messages, streamed) and replays
// recorded model turns from testdata. It is a separate HTTP server: the
// agent's requests cross the SDKs' real clients and a real socket. It
// records every request so tests can assert what reached the provider.

type replayCall struct {
	Name string         `json:"name"`
	Args map[string]any `json:"args"`
}

type replayTurn struct {
	Expect []string `json:"expect"`
	// ExpectAny: at least one of these must be there (a turn that answers
	// results that differ by the model's capability).
	ExpectAny []string     `json:"expectAny"`
	Text      string       `json:"text"`
	Calls     []replayCall `json:"calls"`
}

type replayRequest struct {
	Path string
	Body []byte
}

type replayServer struct {
	t     *testing.T
	wire  string // "openai" or "anthropic"
	turns []replayTurn
	vars  map[string]string
	srv   *httptest.Server

	mu   sync.Mutex
	reqs []replayRequest
	errs []string
}

func loadTurns(t *testing.T, path string) []replayTurn {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Turns []replayTurn `json:"turns"`
	}
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return f.Turns
}

func startReplay(t *testing.T, wire string, turns []replayTurn, vars map[string]string) *replayServer {
	t.Helper()
	r := &replayServer{t: t, wire: wire, turns: turns, vars: vars}
	r.srv = httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(r.srv.Close)
	return r
}

// URL is the base URL the SDK appends its paths to.
func (r *replayServer) URL() string {
	if r.wire == "openai" {
		return r.srv.URL + "/v1"
	}
	return r.srv.URL
}

func (r *replayServer) requests() []replayRequest {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]replayRequest(nil), r.reqs...)
}

func (r *replayServer) problems() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.errs...)
}

func (r *replayServer) fail(w http.ResponseWriter, status int, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	r.mu.Lock()
	r.errs = append(r.errs, msg)
	r.mu.Unlock()
	http.Error(w, `{"error":{"message":`+jsonString(msg)+`,"type":"invalid_request_error"}}`, status)
}

func jsonString(s string) string { b, _ := json.Marshal(s); return string(b) }

func (r *replayServer) serve(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	r.reqs = append(r.reqs, replayRequest{Path: req.URL.Path, Body: body})
	r.mu.Unlock()
	want := "/v1/chat/completions"
	if r.wire == "anthropic" {
		want = "/v1/messages"
	}
	if req.Method != http.MethodPost || req.URL.Path != want {
		r.fail(w, http.StatusNotFound, "unexpected %s %s", req.Method, req.URL.Path)
		return
	}
	var msg map[string]any
	if err := json.Unmarshal(body, &msg); err != nil {
		r.fail(w, http.StatusBadRequest, "body: %v", err)
		return
	}
	msgs, _ := msg["messages"].([]any)
	// The turn is the number of assistant messages so far.
	n, lastAssistant := 0, -1
	for i, m := range msgs {
		if mm, _ := m.(map[string]any); mm["role"] == "assistant" {
			n++
			lastAssistant = i
		}
	}
	if n >= len(r.turns) {
		r.fail(w, http.StatusBadRequest, "no recorded turn %d", n)
		return
	}
	turn := r.turns[n]
	// What the model is told this turn: the strings after its last answer.
	var tail strings.Builder
	for _, m := range msgs[lastAssistant+1:] {
		collectStrings(m, &tail)
	}
	for _, e := range turn.Expect {
		if !strings.Contains(tail.String(), e) {
			r.fail(w, http.StatusBadRequest, "turn %d: the request's new messages lack %q: %.600s", n, e, tail.String())
			return
		}
	}
	if len(turn.ExpectAny) > 0 {
		found := false
		for _, e := range turn.ExpectAny {
			found = found || strings.Contains(tail.String(), e)
		}
		if !found {
			r.fail(w, http.StatusBadRequest, "turn %d: the request's new messages lack all of %q: %.600s", n, turn.ExpectAny, tail.String())
			return
		}
	}
	vars := map[string]string{}
	for k, v := range r.vars {
		vars[k] = v
	}
	for _, m := range msgs {
		collectVars(m, vars)
	}
	var calls []replayCall
	for _, c := range turn.Calls {
		b, _ := json.Marshal(c.Args)
		s := varRE.ReplaceAllStringFunc(string(b), func(m string) string {
			k := m[2 : len(m)-2]
			v, ok := vars[k]
			if !ok {
				r.mu.Lock()
				r.errs = append(r.errs, fmt.Sprintf("turn %d: no value for {{%s}}", n, k))
				r.mu.Unlock()
			}
			return v
		})
		var args map[string]any
		_ = json.Unmarshal([]byte(s), &args)
		calls = append(calls, replayCall{Name: c.Name, Args: args})
	}
	stream, _ := msg["stream"].(bool)
	model, _ := msg["model"].(string)
	switch {
	case r.wire == "anthropic" && stream:
		anthropicStream(w, model, n, turn.Text, calls)
	case r.wire == "anthropic":
		anthropicJSON(w, model, n, turn.Text, calls)
	case stream:
		openaiStream(w, model, n, turn.Text, calls)
	default:
		openaiJSON(w, model, n, turn.Text, calls)
	}
}

var varRE = regexp.MustCompile(`\{\{[a-zA-Z_:]+\}\}`)

func collectStrings(v any, b *strings.Builder) {
	switch v := v.(type) {
	case string:
		b.WriteString(v)
		b.WriteByte('\n')
	case []any:
		for _, e := range v {
			collectStrings(e, b)
		}
	case map[string]any:
		for _, e := range v {
			collectStrings(e, b)
		}
	}
}

// collectVars reads tabId and the site tools' ids from tool results (JSON
// text inside the messages), the newest last.
func collectVars(v any, vars map[string]string) {
	switch v := v.(type) {
	case string:
		var obj map[string]any
		if !strings.HasPrefix(v, "{") || json.Unmarshal([]byte(strings.SplitN(v, "\n[", 2)[0]), &obj) != nil {
			return
		}
		if id, ok := obj["tabId"].(string); ok && obj["ok"] == true {
			vars["tabId"] = id
		}
		tools, _ := obj["tools"].([]any)
		for _, t := range tools {
			m, _ := t.(map[string]any)
			name, _ := m["name"].(string)
			id, _ := m["toolId"].(string)
			vars["toolId:"+name] = id
		}
	case []any:
		for _, e := range v {
			collectVars(e, vars)
		}
	case map[string]any:
		// Keys in a fixed order would not matter: results come in messages
		// (a list), and one message holds one result per call.
		for _, k := range []string{"content", "text", "output", "messages"} {
			if e, ok := v[k]; ok {
				collectVars(e, vars)
			}
		}
	}
}

func argsJSON(a map[string]any) string { b, _ := json.Marshal(a); return string(b) }

func openaiJSON(w http.ResponseWriter, model string, n int, text string, calls []replayCall) {
	m := map[string]any{"role": "assistant", "content": nil}
	if text != "" {
		m["content"] = text
	}
	finish := "stop"
	if len(calls) > 0 {
		var tcs []any
		for i, c := range calls {
			tcs = append(tcs, map[string]any{"id": fmt.Sprintf("call_%d_%d", n, i), "type": "function",
				"function": map[string]any{"name": c.Name, "arguments": argsJSON(c.Args)}})
		}
		m["tool_calls"] = tcs
		finish = "tool_calls"
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{
		"id": fmt.Sprintf("chatcmpl-%d", n), "object": "chat.completion", "created": time.Now().Unix(), "model": model,
		"choices": []any{map[string]any{"index": 0, "message": m, "finish_reason": finish}},
		"usage":   map[string]any{"prompt_tokens": 1000 + n, "completion_tokens": 20, "total_tokens": 1020 + n},
	})
}

func openaiStream(w http.ResponseWriter, model string, n int, text string, calls []replayCall) {
	w.Header().Set("Content-Type", "text/event-stream")
	id, created := fmt.Sprintf("chatcmpl-%d", n), time.Now().Unix()
	chunk := func(delta map[string]any, finish any) map[string]any {
		return map[string]any{"id": id, "object": "chat.completion.chunk", "created": created, "model": model,
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}}
	}
	fakemodel.SSE(w, "", chunk(map[string]any{"role": "assistant", "content": ""}, nil))
	for _, part := range splitHalves(text) {
		fakemodel.SSE(w, "", chunk(map[string]any{"content": part}, nil))
	}
	for i, c := range calls {
		fakemodel.SSE(w, "", chunk(map[string]any{"tool_calls": []any{map[string]any{"index": i, "id": fmt.Sprintf("call_%d_%d", n, i), "type": "function",
			"function": map[string]any{"name": c.Name, "arguments": ""}}}}, nil))
		for _, part := range splitHalves(argsJSON(c.Args)) {
			fakemodel.SSE(w, "", chunk(map[string]any{"tool_calls": []any{map[string]any{"index": i, "function": map[string]any{"arguments": part}}}}, nil))
		}
	}
	finish := "stop"
	if len(calls) > 0 {
		finish = "tool_calls"
	}
	fakemodel.SSE(w, "", chunk(map[string]any{}, finish))
	fakemodel.SSE(w, "", map[string]any{"id": id, "object": "chat.completion.chunk", "created": created, "model": model, "choices": []any{},
		"usage": map[string]any{"prompt_tokens": 1000 + n, "completion_tokens": 20, "total_tokens": 1020 + n}})
	fmt.Fprint(w, "data: [DONE]\n\n")
}

// splitHalves cuts s in two so deltas really arrive in pieces.
func splitHalves(s string) []string {
	if s == "" {
		return nil
	}
	h := len(s) / 2
	for h > 0 && !utf8Start(s[h]) {
		h--
	}
	if h == 0 {
		return []string{s}
	}
	return []string{s[:h], s[h:]}
}

func utf8Start(b byte) bool { return b&0xC0 != 0x80 }

func anthropicJSON(w http.ResponseWriter, model string, n int, text string, calls []replayCall) {
	var content []any
	if text != "" {
		content = append(content, map[string]any{"type": "text", "text": text})
	}
	for i, c := range calls {
		content = append(content, map[string]any{"type": "tool_use", "id": fmt.Sprintf("toolu_%d_%d", n, i), "name": c.Name, "input": c.Args})
	}
	stop := "end_turn"
	if len(calls) > 0 {
		stop = "tool_use"
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"id": fmt.Sprintf("msg_%d", n), "type": "message", "role": "assistant", "model": model,
		"content": content, "stop_reason": stop, "stop_sequence": nil, "usage": map[string]any{"input_tokens": 1000 + n, "output_tokens": 20}})
}

func anthropicStream(w http.ResponseWriter, model string, n int, text string, calls []replayCall) {
	w.Header().Set("Content-Type", "text/event-stream")
	fakemodel.SSE(w, "message_start", map[string]any{"type": "message_start", "message": map[string]any{"id": fmt.Sprintf("msg_%d", n), "type": "message", "role": "assistant",
		"model": model, "content": []any{}, "stop_reason": nil, "stop_sequence": nil, "usage": map[string]any{"input_tokens": 1000 + n, "output_tokens": 1}}})
	idx := 0
	if text != "" {
		fakemodel.SSE(w, "content_block_start", map[string]any{"type": "content_block_start", "index": idx, "content_block": map[string]any{"type": "text", "text": ""}})
		for _, part := range splitHalves(text) {
			fakemodel.SSE(w, "content_block_delta", map[string]any{"type": "content_block_delta", "index": idx, "delta": map[string]any{"type": "text_delta", "text": part}})
		}
		fakemodel.SSE(w, "content_block_stop", map[string]any{"type": "content_block_stop", "index": idx})
		idx++
	}
	for i, c := range calls {
		fakemodel.SSE(w, "content_block_start", map[string]any{"type": "content_block_start", "index": idx,
			"content_block": map[string]any{"type": "tool_use", "id": fmt.Sprintf("toolu_%d_%d", n, i), "name": c.Name, "input": map[string]any{}}})
		for _, part := range splitHalves(argsJSON(c.Args)) {
			fakemodel.SSE(w, "content_block_delta", map[string]any{"type": "content_block_delta", "index": idx, "delta": map[string]any{"type": "input_json_delta", "partial_json": part}})
		}
		fakemodel.SSE(w, "content_block_stop", map[string]any{"type": "content_block_stop", "index": idx})
		idx++
	}
	stop := "end_turn"
	if len(calls) > 0 {
		stop = "tool_use"
	}
	fakemodel.SSE(w, "message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": stop, "stop_sequence": nil}, "usage": map[string]any{"output_tokens": 20}})
	fakemodel.SSE(w, "message_stop", map[string]any{"type": "message_stop"})
}

// pngB64 is how every PNG starts in base64: the signature's first bytes.
const pngB64 = "iVBORw0KGgo"

func hasImage(b []byte) bool { return bytes.Contains(b, []byte(pngB64)) }
