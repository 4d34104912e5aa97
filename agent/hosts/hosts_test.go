package hosts

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
)

var target = Target{URL: "http://127.0.0.1:4321/mcp", Token: "tw_secret-123", Command: "/opt/tw bin/tabwarden"}

func TestRenderEveryHost(t *testing.T) {
	for _, name := range Names() {
		for _, tr := range []Transport{HTTP, Stdio} {
			s, err := Render(name, tr, target)
			if err != nil {
				t.Fatal(err)
			}
			if s.Transport != tr || len(s.Parts) == 0 {
				t.Fatalf("%s %s: %+v", name, tr, s)
			}
			first := s.Parts[0].Text
			wantIn := target.URL
			if tr == Stdio {
				wantIn = "mcp-stdio"
			}
			if !strings.Contains(first, wantIn) || !strings.Contains(first, target.Token) {
				t.Errorf("%s %s: snippet lacks %q or the token:\n%s", name, tr, wantIn, first)
			}
			if tr == Stdio && strings.Contains(first, target.URL) {
				t.Errorf("%s stdio: the relay form names the URL, which changes when the console restarts:\n%s", name, first)
			}
			for _, p := range s.Parts {
				if !strings.HasSuffix(p.Text, "\n") {
					t.Errorf("%s %s: a part does not end in a newline: %q", name, tr, p.Text)
				}
				if p.Lang == "json" {
					var v map[string]any
					if err := json.Unmarshal([]byte(p.Text), &v); err != nil {
						t.Errorf("%s %s: not JSON: %v\n%s", name, tr, err, p.Text)
					}
				}
			}
		}
		if s, err := Render(name, "", target); err != nil || s.Transport == "" {
			t.Errorf("%s: the preferred transport: %+v %v", name, s, err)
		}
	}
	if _, err := Render("notepad", HTTP, target); err == nil || !strings.Contains(err.Error(), "claude-code") {
		t.Errorf("an unknown host: %v", err)
	}
	if _, err := Render("codex", "carrier-pigeon", target); err == nil || !strings.Contains(err.Error(), "stdio") {
		t.Errorf("an unknown transport: %v", err)
	}
}

// Claude Code's HTTP is sessionless, so connect prints the relay for it.
func TestPreferred(t *testing.T) {
	for host, want := range map[string]Transport{"claude-code": Stdio, "codex": HTTP, "gemini-cli": HTTP, "opencode": HTTP} {
		if got, err := Preferred(host); err != nil || got != want {
			t.Errorf("%s: %q %v, want %q", host, got, err, want)
		}
	}
}

// Each host's JSON puts the server where the host's documented format
// expects it, with the bearer header or the relay and its token, and with
// what lets the host call the tools without its own prompt.
func TestRenderShapes(t *testing.T) {
	path := map[string][]string{
		"opencode":   {"mcp", ServerName},
		"gemini-cli": {"mcpServers", ServerName},
		"cursor":     {"mcpServers", ServerName},
		"vscode":     {"servers", ServerName},
	}
	urlKey := map[string]string{"opencode": "url", "gemini-cli": "httpUrl", "cursor": "url", "vscode": "url"}
	server := func(host string, tr Transport) map[string]any {
		s, _ := Render(host, tr, Target{URL: "U", Token: "T", Command: "C"})
		var node any
		if err := json.Unmarshal([]byte(s.Parts[0].Text), &node); err != nil {
			t.Fatal(err)
		}
		for _, k := range path[host] {
			node = node.(map[string]any)[k]
		}
		return node.(map[string]any)
	}
	for host := range path {
		srv := server(host, HTTP)
		if srv[urlKey[host]] != "U" || srv["headers"].(map[string]any)["Authorization"] != "Bearer T" {
			t.Errorf("%s: server entry %v", host, srv)
		}
		srv = server(host, Stdio)
		b, _ := json.Marshal(srv)
		env := "env"
		if host == "opencode" {
			env = "environment"
		}
		if got := srv[env].(map[string]any)[TokenEnv]; got != "T" || !strings.Contains(string(b), `"C"`) || !strings.Contains(string(b), `"mcp-stdio"`) {
			t.Errorf("%s stdio: server entry %s", host, b)
		}
	}
	if srv := server("gemini-cli", HTTP); srv["trust"] != true {
		t.Errorf("gemini-cli: not trusted: %v", srv)
	}
	if srv := server("opencode", Stdio); srv["type"] != "local" {
		t.Errorf("opencode stdio: %v", srv)
	}
	s, _ := Render("codex", HTTP, Target{URL: "U", Token: "T"})
	for _, line := range []string{"[mcp_servers.tabwarden]", `url = "U"`, `http_headers = { Authorization = "Bearer T" }`, `default_tools_approval_mode = "approve"`} {
		if !strings.Contains(s.Parts[0].Text, line+"\n") {
			t.Errorf("codex snippet lacks %q:\n%s", line, s.Parts[0].Text)
		}
	}
	s, _ = Render("claude-code", HTTP, Target{URL: "U", Token: "it's"})
	if s.Parts[0].Text != "claude mcp remove --scope user tabwarden 2>/dev/null\n"+`claude mcp add --scope user --transport http tabwarden U --header 'Authorization: Bearer it'\''s'`+"\n" {
		t.Errorf("claude-code quoting: %q", s.Parts[0].Text)
	}
	s, _ = Render("claude-code", Stdio, Target{Token: "T", Command: "/a b/tabwarden"})
	if s.Parts[0].Text != "claude mcp remove --scope user tabwarden 2>/dev/null\n"+`claude mcp add --scope user tabwarden -e TABWARDEN_TOKEN=T -- '/a b/tabwarden' mcp-stdio`+"\n" ||
		!strings.Contains(s.Parts[1].Text, `"mcp__tabwarden"`) {
		t.Errorf("claude-code stdio: %q", s.Parts)
	}
}

// The README's snippets are exactly what `tabwarden connect` prints, with
// URL and TOKEN in place of the live values, for both transports.
func TestReadmeSnippetsMatchRender(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range Names() {
		for _, tr := range []Transport{HTTP, Stdio} {
			s, _ := Render(name, tr, Target{URL: "URL", Token: "TOKEN", Command: "tabwarden"})
			for _, p := range s.Parts {
				block := "```" + p.Lang + "\n" + p.Text + "```\n"
				if !strings.Contains(string(readme), block) {
					t.Errorf("README lacks the %s %s snippet as connect prints it:\n%s", name, tr, block)
				}
			}
		}
	}
}
