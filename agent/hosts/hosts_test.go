package hosts

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
)

func TestRenderEveryHost(t *testing.T) {
	const url, token = "http://127.0.0.1:4321/mcp", "tw_secret-123"
	for _, name := range Names() {
		s, err := Render(name, url, token)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(s.Text, url) || !strings.Contains(s.Text, token) || !strings.HasSuffix(s.Text, "\n") {
			t.Errorf("%s: snippet lacks the URL or token:\n%s", name, s.Text)
		}
		if s.Lang == "json" {
			var v map[string]any
			if err := json.Unmarshal([]byte(s.Text), &v); err != nil {
				t.Errorf("%s: not JSON: %v\n%s", name, err, s.Text)
			}
		}
	}
	if _, err := Render("notepad", url, token); err == nil || !strings.Contains(err.Error(), "claude-code") {
		t.Errorf("an unknown host: %v", err)
	}
}

// Each host's JSON puts the server where the host's documented format
// expects it, with the bearer header.
func TestRenderShapes(t *testing.T) {
	path := map[string][]string{
		"opencode":   {"mcp", "servers", ServerName},
		"gemini-cli": {"mcpServers", ServerName},
		"cursor":     {"mcpServers", ServerName},
		"vscode":     {"servers", ServerName},
	}
	urlKey := map[string]string{"opencode": "url", "gemini-cli": "httpUrl", "cursor": "url", "vscode": "url"}
	for host, p := range path {
		s, _ := Render(host, "U", "T")
		var node any
		if err := json.Unmarshal([]byte(s.Text), &node); err != nil {
			t.Fatal(err)
		}
		for _, k := range p {
			node = node.(map[string]any)[k]
		}
		srv := node.(map[string]any)
		if srv[urlKey[host]] != "U" || srv["headers"].(map[string]any)["Authorization"] != "Bearer T" {
			t.Errorf("%s: server entry %v", host, srv)
		}
	}
	s, _ := Render("codex", "U", "T")
	for _, line := range []string{"[mcp_servers.tabwarden]", `url = "U"`, `bearer_token_env_var = "TABWARDEN_TOKEN"`, "# export TABWARDEN_TOKEN=T"} {
		if !strings.Contains(s.Text, line+"\n") {
			t.Errorf("codex snippet lacks %q:\n%s", line, s.Text)
		}
	}
	if s, _ := Render("claude-code", "U", "it's"); s.Text != `claude mcp add --transport http tabwarden U --header 'Authorization: Bearer it'\''s'`+"\n" {
		t.Errorf("claude-code quoting: %q", s.Text)
	}
}

// The README's snippets are exactly what `tabwarden connect` prints, with
// URL and TOKEN in place of the live values.
func TestReadmeSnippetsMatchRender(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range Names() {
		s, _ := Render(name, "URL", "TOKEN")
		block := "```" + s.Lang + "\n" + s.Text + "```\n"
		if !strings.Contains(string(readme), block) {
			t.Errorf("README lacks the %s snippet as connect prints it:\n%s", name, block)
		}
	}
}
