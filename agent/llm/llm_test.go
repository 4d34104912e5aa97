package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// chatServer is a loopback chat-completions endpoint that fails the first
// `fail` requests with status, then answers with one text turn.
func chatServer(t *testing.T, status int, fail int32) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		i := n.Add(1)
		if r.URL.Path != "/v1/chat/completions" {
			http.Error(w, `{"error":{"message":"no route"}}`, http.StatusNotFound)
			return
		}
		if i <= fail {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(status)
			fmt.Fprintf(w, `{"error":{"message":"status %d from the test server","type":"x"}}`, status)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"id": "c1", "object": "chat.completion", "created": time.Now().Unix(), "model": "m",
			"choices": []any{map[string]any{"index": 0, "message": map[string]any{"role": "assistant", "content": "hello"}, "finish_reason": "stop"}},
			"usage":   map[string]any{"prompt_tokens": 7, "completion_tokens": 2, "total_tokens": 9},
		})
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

func newTestModel(t *testing.T, url string) Model {
	t.Helper()
	m, err := New(context.Background(), Config{Provider: ProviderOpenAI, BaseURL: url + "/v1", Model: "local-model", APIKey: "k",
		Backoff: time.Millisecond, MaxRetries: 3, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestRetriesRetryableThenAnswers(t *testing.T) {
	for _, status := range []int{429, 500, 503} {
		srv, n := chatServer(t, status, 2)
		turn, err := newTestModel(t, srv.URL).Turn(context.Background(), Request{Messages: []Message{{Role: RoleUser, Text: "hi"}}}, nil)
		if err != nil {
			t.Fatalf("%d: %v", status, err)
		}
		if turn.Text != "hello" || turn.Usage.Total() != 9 || n.Load() != 3 {
			t.Errorf("%d: turn %+v after %d requests", status, turn, n.Load())
		}
	}
}

func TestNoRetryAndClearMessages(t *testing.T) {
	for status, want := range map[int]string{
		401: "refused the API key (HTTP 401): check OPENAI_API_KEY",
		404: `has no model "local-model"`,
		400: "HTTP 400",
	} {
		srv, n := chatServer(t, status, 100)
		_, err := newTestModel(t, srv.URL).Turn(context.Background(), Request{Messages: []Message{{Role: RoleUser, Text: "hi"}}}, nil)
		var e *Error
		if !errors.As(err, &e) || !strings.Contains(e.Error(), want) || e.Status != status {
			t.Errorf("%d: error %v, want it to say %q", status, err, want)
		}
		if n.Load() != 1 {
			t.Errorf("%d: %d requests; a %d is not retried", status, n.Load(), status)
		}
	}
}

func TestGivesUpAfterMaxRetries(t *testing.T) {
	srv, n := chatServer(t, 500, 100)
	_, err := newTestModel(t, srv.URL).Turn(context.Background(), Request{Messages: []Message{{Role: RoleUser, Text: "hi"}}}, nil)
	var e *Error
	if !errors.As(err, &e) || !e.Retryable {
		t.Fatalf("error %v", err)
	}
	if n.Load() != 4 {
		t.Errorf("%d requests, want 1 + 3 retries", n.Load())
	}
}

func TestTimeout(t *testing.T) {
	block := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-block }))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(block) })
	m, err := New(context.Background(), Config{Provider: ProviderOpenAI, BaseURL: srv.URL + "/v1", Model: "m", APIKey: "k", MaxRetries: -1, Timeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	_, err = m.Turn(context.Background(), Request{Messages: []Message{{Role: RoleUser, Text: "hi"}}}, nil)
	if err == nil || !strings.Contains(err.Error(), "did not answer within") {
		t.Errorf("error %v", err)
	}
}

func TestCapabilityTable(t *testing.T) {
	for model, vision := range map[string]bool{
		"gpt-4o-mini": true, "claude-sonnet-4-5": true, "Qwen/Qwen2.5-VL-7B-Instruct": true, "llava:13b": true,
		"llama3.1:8b": false, "qwen2.5-coder": false, "local-text-model": false, "gpt-3.5-turbo": false,
	} {
		if got := VisionModel(model); got != vision {
			t.Errorf("VisionModel(%q) = %v", model, got)
		}
	}
	m, err := New(context.Background(), Config{Provider: ProviderOpenAI, BaseURL: "http://127.0.0.1:1/v1", Model: "gpt-4o", Images: "off"})
	if err != nil || m.Vision() {
		t.Errorf("--images off: vision %v, %v", m != nil && m.Vision(), err)
	}
	m, err = New(context.Background(), Config{Provider: ProviderOpenAI, BaseURL: "http://127.0.0.1:1/v1", Model: "llama3.1", Images: "on"})
	if err != nil || !m.Vision() {
		t.Errorf("--images on: %v", err)
	}
	if _, ok := PriceOf("llama3.1"); ok {
		t.Error("a local model has a price")
	}
	if p, ok := PriceOf("gpt-4o-mini-2024-07-18"); !ok || p.In != 0.15 {
		t.Errorf("gpt-4o-mini price %+v %v", p, ok)
	}
}

func TestSetupsFile(t *testing.T) {
	dir := t.TempDir()
	path := SetupsFile(dir)
	if s, err := LoadSetups(path); err != nil || s != nil {
		t.Fatalf("missing file: %v %v", s, err)
	}
	if err := os.WriteFile(path, []byte(`{"setups":{"local":{"provider":"openai","baseURL":"http://127.0.0.1:8080/v1","model":"qwen","images":"on"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := LoadSetups(path)
	if err != nil || s["local"].Model != "qwen" || s["local"].Images != "on" {
		t.Fatalf("%+v %v", s, err)
	}
	for _, bad := range []string{
		`{"setups":{"x":{"provider":"gemini","model":"m"}}}`,
		`{"setups":{"x":{"provider":"openai","model":"m","apiKey":"sk-123"}}}`, // keys never live here
		`{"setups":{"x":{"provider":"openai","model":"m","images":"maybe"}}}`,
	} {
		if err := os.WriteFile(filepath.Join(dir, "providers.json"), []byte(bad), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := LoadSetups(path); err == nil {
			t.Errorf("accepted %s", bad)
		}
	}
}
