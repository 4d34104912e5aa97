// Package fakemodel is a scripted LLM on loopback that speaks the streaming
// wire formats real agent hosts use: Anthropic Messages (Claude Code),
// OpenAI Responses (Codex), OpenAI Chat Completions (opencode) and Gemini
// generateContent/streamGenerateContent (Gemini CLI). It lets the real-hosts
// tests run each host unmodified, with nothing leaving the machine.
//
// The model is stateless: each request's answer follows from how many of the
// script's tool results the request already carries, so a host that retries a
// turn gets the same answer again. A request that does not offer the script's
// tools (a host's title, routing or next-speaker side requests) gets a short
// text answer, or, when the request asks for JSON with a schema, the smallest
// object the schema accepts.
//
// It is a test helper: nothing in the shipped binary imports it.
package fakemodel

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"
)

// Step is one scripted tool call: the tool is found in the request's offered
// tools by the suffix of its name (hosts prefix MCP tools: Claude Code
// "mcp__tabwarden__browser_open", opencode "tabwarden_browser_open").
type Step struct {
	Tool string
	Args map[string]any
}

// Script is one agent turn: call each step in order, each after the previous
// one's result came back, then answer Final.
type Script struct {
	Steps []Step
	Final string
}

// Wire names the vendor format a request used.
type Wire string

// The wire formats the server speaks.
const (
	Anthropic Wire = "anthropic-messages"
	Responses Wire = "openai-responses"
	Chat      Wire = "openai-chat"
	Gemini    Wire = "gemini"
)

// Request is what the server saw of one model request.
type Request struct {
	Wire   Wire
	Path   string
	Stream bool
	// Offered lists the names of the tools the request offered.
	Offered []string
	// Results are the texts of the script's tool results the request
	// carried, in order.
	Results []string
	// Answer says what the model answered: "call NAME ARGS", "text ..." or
	// "side ...".
	Answer string
}

// Server is the fake model's HTTP server on 127.0.0.1.
type Server struct {
	// URL is http://127.0.0.1:PORT, without a path.
	URL string

	script Script
	srv    *http.Server

	mu       sync.Mutex
	requests []Request
	unknown  []string
}

// Start serves script on a fresh loopback port.
func Start(script Script) (*Server, error) {
	ln, err := new(net.ListenConfig).Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("fakemodel: listen: %w", err)
	}
	s := &Server{URL: "http://" + ln.Addr().String(), script: script}
	s.srv = &http.Server{Handler: http.HandlerFunc(s.serve), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = s.srv.Serve(ln) }()
	return s, nil
}

// SetScript replaces the script and forgets every request so far, so one
// server (one URL in a host's configuration) serves run after run.
func (s *Server) SetScript(script Script) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.script, s.requests, s.unknown = script, nil, nil
}

// Close stops the server.
func (s *Server) Close() { _ = s.srv.Close() }

// Requests returns every model request answered so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.requests)
}

// Unknown returns "METHOD PATH" of every request the server had no answer
// for (answered 404).
func (s *Server) Unknown() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.unknown)
}

// Results returns the most tool results any request carried back: what the
// host told the model its tool calls returned.
func (s *Server) Results() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var best []string
	for _, r := range s.requests {
		if len(r.Results) > len(best) {
			best = r.Results
		}
	}
	return slices.Clone(best)
}

func (s *Server) record(r Request) {
	s.mu.Lock()
	s.requests = append(s.requests, r)
	s.mu.Unlock()
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 64<<20))
	if err != nil {
		http.Error(w, "read body", http.StatusBadRequest)
		return
	}
	path := r.URL.Path
	switch {
	case r.Method == http.MethodPost && strings.HasSuffix(path, "/messages/count_tokens"):
		writeJSON(w, map[string]any{"input_tokens": len(body) / 4})
	case r.Method == http.MethodPost && strings.HasSuffix(path, "/messages"):
		s.anthropic(w, path, body)
	case r.Method == http.MethodPost && strings.HasSuffix(path, "/responses"):
		s.responses(w, path, body)
	case r.Method == http.MethodPost && strings.HasSuffix(path, "/chat/completions"):
		s.chat(w, path, body)
	case r.Method == http.MethodPost && strings.Contains(path, ":streamGenerateContent"):
		s.gemini(w, path, body, true)
	case r.Method == http.MethodPost && strings.Contains(path, ":generateContent"):
		s.gemini(w, path, body, false)
	case r.Method == http.MethodPost && strings.Contains(path, ":countTokens"):
		writeJSON(w, map[string]any{"totalTokens": len(body) / 4})
	case r.Method == http.MethodGet && strings.HasSuffix(path, "/models"):
		writeJSON(w, map[string]any{"object": "list", "data": []any{}, "models": []any{}})
	default:
		s.mu.Lock()
		s.unknown = append(s.unknown, r.Method+" "+r.URL.RequestURI())
		s.mu.Unlock()
		http.Error(w, "fakemodel: no such endpoint", http.StatusNotFound)
	}
}

// turn is the model's decision for one request.
type turn struct {
	call     *Step  // the scripted call, with the tool's offered name in Tool
	text     string // else the text answer
	jsonText bool   // text is the JSON a schema asked for
}

// decide picks the answer for a request that offered tools (names) and
// carried results tool results.
func (s *Server) decide(offered []string, results int) (turn, string) {
	s.mu.Lock()
	script := s.script
	s.mu.Unlock()
	if len(script.Steps) == 0 || offeredName(offered, script.Steps[0].Tool) == "" {
		return turn{text: "OK."}, "side text"
	}
	if results < len(script.Steps) {
		st := script.Steps[results]
		name := offeredName(offered, st.Tool)
		if name == "" {
			return turn{text: "The tool " + st.Tool + " is not offered."}, "text tool " + st.Tool + " not offered"
		}
		args := st.Args
		if args == nil {
			args = map[string]any{}
		}
		call := Step{Tool: name, Args: args}
		b, _ := json.Marshal(args)
		return turn{call: &call}, "call " + name + " " + string(b)
	}
	return turn{text: script.Final}, "text " + script.Final
}

// offeredName finds the offered tool whose name is suffix or ends in a
// separator and suffix.
func offeredName(offered []string, suffix string) string {
	for _, n := range offered {
		if n == suffix || strings.HasSuffix(n, "_"+suffix) || strings.HasSuffix(n, "."+suffix) || strings.HasSuffix(n, "/"+suffix) {
			return n
		}
	}
	return ""
}

// resultText flattens a tool result's content (a string, or a list of
// content blocks) to its text.
func resultText(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case []any:
		var b strings.Builder
		for _, e := range x {
			if m, ok := e.(map[string]any); ok {
				if t, ok := m["text"].(string); ok {
					b.WriteString(t)
					continue
				}
			}
			b.WriteString(resultText(e))
		}
		return b.String()
	case nil:
		return ""
	default:
		b, _ := json.Marshal(x)
		return string(b)
	}
}

// idPrefix starts every call id this model mints; results are counted by the
// ids the host echoes, so a host's own tool use does not shift the script.
const idPrefix = "call_tw"

func callID(n int) string { return fmt.Sprintf("%s%d", idPrefix, n) }

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

// SSE writes one server-sent event (event may be empty) and flushes it:
// the framing every streaming wire format here shares.
func SSE(w http.ResponseWriter, event string, v any) {
	b, _ := json.Marshal(v)
	if event != "" {
		fmt.Fprintf(w, "event: %s\n", event)
	}
	fmt.Fprintf(w, "data: %s\n\n", b)
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
}

func sseHeaders(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
}

// halves splits s in two pieces (at a byte boundary that keeps UTF-8 whole),
// so every argument string travels as more than one delta.
func halves(s string) []string {
	if len(s) < 2 {
		return []string{s}
	}
	i := len(s) / 2
	for i > 0 && s[i]&0xC0 == 0x80 {
		i--
	}
	return []string{s[:i], s[i:]}
}
