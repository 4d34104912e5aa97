package mcpserver

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tabwarden/tabwarden/agent"
)

var update = flag.Bool("update", false, "rewrite the golden wire transcripts in testdata/")

// transcriptCase is one request of the tool surface on the wire.
type transcriptCase struct {
	file    string
	about   string
	version string // Mcp-Protocol-Version header; "" for the stateful handshake
	method  string
	params  map[string]any
}

func transcriptCases() []transcriptCase {
	call := func(tool string, args map[string]any) map[string]any {
		p := map[string]any{"name": tool}
		if args != nil {
			p["arguments"] = args
		}
		return p
	}
	click := map[string]any{"type": "click", "ref": "e1"}
	return []transcriptCase{
		{"initialize_stateful", "A 2025-11-25 client's initialize: the stateful handler answers (the session id travels in the Mcp-Session-Id header).", "", "initialize",
			map[string]any{"protocolVersion": statefulVersion, "clientInfo": map[string]any{"name": "raw-client", "version": "1.0"}, "capabilities": map[string]any{}}},
		{"discover_sessionless", "A 2026-07-28 client's server/discover: the sessionless handler answers.", sessionlessVersion, "server/discover", nil},
		{"tools_list", "tools/list: every tool with its inferred input schema and annotations.", sessionlessVersion, "tools/list", nil},
		{"browser_tabs", "browser_tabs success.", sessionlessVersion, "tools/call", call("browser_tabs", nil)},
		{"browser_open", "browser_open success (after navigation consent).", sessionlessVersion, "tools/call", call("browser_open", map[string]any{"url": "https://shop.test/"})},
		{"browser_navigate", "browser_navigate success.", sessionlessVersion, "tools/call", call("browser_navigate", map[string]any{"tabId": "tab-1", "url": "https://shop.test/cart"})},
		{"browser_observe", "browser_observe with an image: text content, structuredContent and an image/png block.", sessionlessVersion, "tools/call", call("browser_observe", map[string]any{"tabId": "tab-1", "includeImage": true})},
		{"browser_act", "browser_act receipt: dispatched, not yet verified.", sessionlessVersion, "tools/call", call("browser_act", map[string]any{"tabId": "tab-1", "observationId": "obs-1", "action": click})},
		{"browser_act_stale_observation", "browser_act reusing a consumed observation: an isError envelope.", sessionlessVersion, "tools/call", call("browser_act", map[string]any{"tabId": "tab-1", "observationId": "obs-used", "action": click})},
		{"browser_verify", "browser_verify success.", sessionlessVersion, "tools/call", call("browser_verify", map[string]any{"tabId": "tab-1", "assertion": "text_contains", "value": "Saved 1"})},
		{"browser_handoff", "browser_handoff: paused until the person resumes.", sessionlessVersion, "tools/call", call("browser_handoff", map[string]any{"tabId": "tab-1", "reason": "sign in"})},
		{"browser_close", "browser_close receipt: the tab is closed, no review.", sessionlessVersion, "tools/call", call("browser_close", map[string]any{"tabId": "tab-1"})},
		{"webmcp_list_tools", "webmcp_list_tools success.", sessionlessVersion, "tools/call", call("webmcp_list_tools", map[string]any{"tabId": "tab-1"})},
		{"webmcp_call_tool", "webmcp_call_tool success (call allowed, result shared).", sessionlessVersion, "tools/call", call("webmcp_call_tool", map[string]any{"tabId": "tab-1", "toolId": "tool-1", "input": map[string]any{"title": "hello"}})},
	}
}

// TestWireTranscripts replays each request against a server with the fake
// Surface and compares request and response with testdata/<case>.txtar.
// Run with -update to rewrite them after a deliberate change.
func TestWireTranscripts(t *testing.T) {
	ts := startServer(t)
	for _, c := range transcriptCases() {
		t.Run(c.file, func(t *testing.T) {
			req := rpcBody(t, c.version, c.method, c.params)
			status, _, resp := rawRequest{Secret: ts.secret, Version: c.version, Body: req}.do(t, ts.url)
			if status != http.StatusOK {
				t.Fatalf("status %d: %s", status, resp)
			}
			got := formatTxtar(c.about+"\nRegenerate: go test ./agent/mcpserver -run TestWireTranscripts -update\n",
				[]txtarFile{{"request", indentJSON(t, req)}, {"response", indentJSON(t, resp)}})
			path := filepath.Join("testdata", c.file+".txtar")
			if *update {
				if err := os.MkdirAll("testdata", 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("%s differs from the wire (run with -update after a deliberate change)\n--- got ---\n%s", path, got)
			}
			// The transcript must say what design.md §5 says, not just what the
			// code did once.
			checkTranscriptMeaning(t, c, parseTxtar(want))
		})
	}
}

func checkTranscriptMeaning(t *testing.T, c transcriptCase, files map[string][]byte) {
	t.Helper()
	var msg struct {
		Result struct {
			ProtocolVersion   string           `json:"protocolVersion"`
			SupportedVersions []string         `json:"supportedVersions"`
			Tools             []map[string]any `json:"tools"`
			Content           []struct {
				Type     string `json:"type"`
				Text     string `json:"text"`
				MimeType string `json:"mimeType"`
			} `json:"content"`
			StructuredContent map[string]any `json:"structuredContent"`
			IsError           bool           `json:"isError"`
		} `json:"result"`
		Error any `json:"error"`
	}
	if err := json.Unmarshal(files["response"], &msg); err != nil {
		t.Fatal(err)
	}
	if msg.Error != nil {
		t.Fatalf("transcript holds a JSON-RPC error: %v", msg.Error)
	}
	r := msg.Result
	switch c.method {
	case "initialize":
		if r.ProtocolVersion != statefulVersion {
			t.Fatalf("initialize negotiated %q", r.ProtocolVersion)
		}
	case "server/discover":
		if !strings.Contains(fmt.Sprint(r.SupportedVersions), sessionlessVersion) {
			t.Fatalf("discover supports %v", r.SupportedVersions)
		}
	case "tools/list":
		if len(r.Tools) != len(agent.Default.Tools) {
			t.Fatalf("tools/list has %d tools", len(r.Tools))
		}
	case "tools/call":
		if len(r.Content) == 0 || r.Content[0].Type != "text" {
			t.Fatalf("no text content first")
		}
		var text map[string]any
		if err := json.Unmarshal([]byte(r.Content[0].Text), &text); err != nil {
			t.Fatalf("text content is not JSON: %v", err)
		}
		a, _ := json.Marshal(text)
		b, _ := json.Marshal(r.StructuredContent)
		if !bytes.Equal(a, b) {
			t.Fatalf("text %s and structuredContent %s differ", a, b)
		}
		if r.IsError != (text["ok"] == false) {
			t.Fatalf("isError %v with ok %v", r.IsError, text["ok"])
		}
		if c.params["name"] == "browser_observe" && (len(r.Content) != 2 || r.Content[1].MimeType != "image/png") {
			t.Fatalf("observe with image lacks its image/png block")
		}
	}
}

func indentJSON(t *testing.T, b []byte) []byte {
	t.Helper()
	var out bytes.Buffer
	if err := json.Indent(&out, b, "", "  "); err != nil {
		t.Fatalf("not JSON: %v: %s", err, b)
	}
	out.WriteByte('\n')
	return out.Bytes()
}

// A minimal txtar (golang.org/x/tools/txtar's format): a comment, then
// files each introduced by a "-- name --" line. Written here rather than
// imported because adding x/tools to go.mod would move shared versions.
type txtarFile struct {
	name string
	data []byte
}

func formatTxtar(comment string, files []txtarFile) []byte {
	var b bytes.Buffer
	b.WriteString(comment)
	for _, f := range files {
		fmt.Fprintf(&b, "-- %s --\n", f.name)
		b.Write(f.data)
		if len(f.data) > 0 && f.data[len(f.data)-1] != '\n' {
			b.WriteByte('\n')
		}
	}
	return b.Bytes()
}

func parseTxtar(b []byte) map[string][]byte {
	files := map[string][]byte{}
	var name string
	for line := range strings.Lines(string(b)) {
		trimmed := strings.TrimSuffix(line, "\n")
		if strings.HasPrefix(trimmed, "-- ") && strings.HasSuffix(trimmed, " --") && len(trimmed) > 6 {
			name = trimmed[3 : len(trimmed)-3]
			files[name] = nil
			continue
		}
		if name != "" {
			files[name] = append(files[name], line...)
		}
	}
	return files
}
