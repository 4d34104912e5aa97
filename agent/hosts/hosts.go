// Package hosts renders the configuration that connects an MCP host (Claude
// Code, Codex, opencode, Gemini CLI, Cursor, VS Code) to the console, each in
// the host's own current format, for `tabwarden connect`, the TUI's `n` and
// the README (a test keeps the README equal to what Render prints).
package hosts

import (
	"encoding/json"
	"fmt"
	"strings"
)

// ServerName is the name every snippet gives the console in the host's
// configuration.
const ServerName = "tabwarden"

// Snippet is one host's ready-to-paste configuration.
type Snippet struct {
	Host string `json:"host"`
	// Title is the host's name as people write it.
	Title string `json:"title"`
	// Where says where Text goes: a shell, or a configuration file.
	Where string `json:"where"`
	// Lang is the snippet's language for a fenced block: sh, json or toml.
	Lang string `json:"lang"`
	// Text is the snippet itself, ending in a newline.
	Text string `json:"text"`
}

type host struct {
	name, title, where, lang string
	render                   func(url, token string) string
}

var table = []host{
	{"claude-code", "Claude Code", "a shell", "sh", func(url, token string) string {
		return fmt.Sprintf("claude mcp add --transport http %s %s --header %s\n",
			ServerName, url, shellQuote("Authorization: Bearer "+token))
	}},
	// Codex refuses an inline bearer token in config.toml; it reads it from
	// the environment variable bearer_token_env_var names.
	{"codex", "Codex", "~/.codex/config.toml (and the export in the shell that starts codex)", "toml", func(url, token string) string {
		return fmt.Sprintf("# export TABWARDEN_TOKEN=%s\n[mcp_servers.%s]\nurl = %q\nbearer_token_env_var = \"TABWARDEN_TOKEN\"\n",
			token, ServerName, url)
	}},
	// opencode V2 keeps servers under mcp.servers; a remote server with a
	// header needs no OAuth.
	{"opencode", "opencode", "opencode.json (project) or ~/.config/opencode/opencode.json", "json", func(url, token string) string {
		return jsonText(map[string]any{
			"$schema": "https://opencode.ai/config.json",
			"mcp": map[string]any{"servers": map[string]any{ServerName: map[string]any{
				"type": "remote", "url": url, "headers": bearerHeader(token),
			}}},
		})
	}},
	{"gemini-cli", "Gemini CLI", "~/.gemini/settings.json", "json", func(url, token string) string {
		return jsonText(map[string]any{"mcpServers": map[string]any{ServerName: map[string]any{
			"httpUrl": url, "headers": bearerHeader(token),
		}}})
	}},
	{"cursor", "Cursor", "~/.cursor/mcp.json (or .cursor/mcp.json in a project)", "json", func(url, token string) string {
		return jsonText(map[string]any{"mcpServers": map[string]any{ServerName: map[string]any{
			"url": url, "headers": bearerHeader(token),
		}}})
	}},
	{"vscode", "VS Code", ".vscode/mcp.json", "json", func(url, token string) string {
		return jsonText(map[string]any{"servers": map[string]any{ServerName: map[string]any{
			"type": "http", "url": url, "headers": bearerHeader(token),
		}}})
	}},
}

// Names lists the hosts Render knows, in the order they are offered.
func Names() []string {
	out := make([]string, len(table))
	for i, h := range table {
		out[i] = h.name
	}
	return out
}

// Render returns host's snippet for the console at url with token.
func Render(name, url, token string) (Snippet, error) {
	for _, h := range table {
		if h.name == name {
			return Snippet{Host: h.name, Title: h.title, Where: h.where, Lang: h.lang, Text: h.render(url, token)}, nil
		}
	}
	return Snippet{}, fmt.Errorf("unknown host %q: use one of %s", name, strings.Join(Names(), ", "))
}

func bearerHeader(token string) map[string]string {
	return map[string]string{"Authorization": "Bearer " + token}
}

// jsonText is v as indented JSON; keys come out sorted, so the text is
// stable for the README comparison.
func jsonText(v any) string {
	// Only maps of strings reach here, which always encode.
	b, _ := json.MarshalIndent(v, "", "  ")
	return string(b) + "\n"
}

// shellQuote quotes s for a POSIX shell.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
