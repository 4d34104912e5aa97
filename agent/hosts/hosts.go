// Package hosts renders the configuration that connects an MCP host (Claude
// Code, Codex, opencode, Gemini CLI, Cursor, VS Code) to the console, each in
// the host's own current format, for `tabwarden connect`, the TUI's `n` and
// the README (a test keeps the README equal to what Render prints).
//
// Every configuration works as printed in the host's non-interactive mode
// (`claude -p`, `codex exec`, `gemini -p`, `opencode run`): it connects and
// lets the host call the tools without a second approval prompt of the
// host's own, because the operator's review in the console is the approval
// point. The real-hosts test (cmd/tabwarden) runs each printed form against
// the real host programs.
package hosts

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// ServerName is the name every snippet gives the console in the host's
// configuration.
const ServerName = "tabwarden"

// TokenEnv is the environment variable the stdio relay (`tabwarden
// mcp-stdio`) reads its agent token from; stdio forms set it in the host's
// configuration, so the token stays out of the relay's command line.
const TokenEnv = "TABWARDEN_TOKEN"

// Transport is how a host reaches the console.
type Transport string

const (
	// HTTP is Streamable HTTP to the console's URL with the bearer token.
	HTTP Transport = "http"
	// Stdio is the host starting `tabwarden mcp-stdio`, which relays to the
	// console; each host process gets its own relay, hence its own
	// conversation.
	Stdio Transport = "stdio"
)

// Target is what a snippet points the host at.
type Target struct {
	URL   string // the console's MCP URL (HTTP)
	Token string // the agent token
	// Command is the tabwarden program the host starts for Stdio: "tabwarden"
	// when that is on PATH, else its absolute path.
	Command string
}

// Part is one piece of a snippet: what goes in one place.
type Part struct {
	// Where says where Text goes: a shell, or a configuration file.
	Where string `json:"where"`
	// Lang is the part's language for a fenced block: sh, json or toml.
	Lang string `json:"lang"`
	// Text is the part itself, ending in a newline.
	Text string `json:"text"`
}

// Snippet is one host's ready-to-paste configuration.
type Snippet struct {
	Host string `json:"host"`
	// Title is the host's name as people write it.
	Title     string    `json:"title"`
	Transport Transport `json:"transport"`
	// Parts go in order: the first connects the host, any further one
	// lets it call the tools without asking.
	Parts []Part `json:"parts"`
}

// Text is the whole snippet as one text: each part after a line that says
// where it goes.
func (s Snippet) Text() string {
	var b strings.Builder
	for i, p := range s.Parts {
		if i > 0 {
			b.WriteString("\n")
		}
		fmt.Fprintf(&b, "# in %s:\n%s", p.Where, p.Text)
	}
	return b.String()
}

type host struct {
	name, title string
	// preferred is the transport connect prints when none is asked for.
	preferred Transport
	render    func(Transport, Target) []Part
}

// claudeSettings lets Claude Code call every tabwarden tool without its own
// prompt (`claude -p` refuses a tool it would have to ask about).
var claudeSettings = Part{"~/.claude/settings.json (merge into what is there)", "json",
	jsonText(map[string]any{"permissions": map[string]any{"allow": []string{"mcp__" + ServerName}}})}

var table = []host{
	// Claude Code speaks the sessionless protocol over HTTP: every process
	// with the same token would be one conversation. The relay gives each
	// process its own, so it is the form connect prints unless asked.
	// --scope user: the default scope exists only in the directory where the
	// command ran.
	// `claude mcp add` refuses a name it has, so the first line drops an
	// earlier tabwarden entry (another transport, a revoked token).
	{"claude-code", "Claude Code", Stdio, func(tr Transport, t Target) []Part {
		remove := fmt.Sprintf("claude mcp remove --scope user %s 2>/dev/null\n", ServerName)
		if tr == Stdio {
			return []Part{{"a shell", "sh", remove + fmt.Sprintf("claude mcp add --scope user %s -e %s=%s -- %s mcp-stdio\n",
				ServerName, TokenEnv, shellQuote(t.Token), shellQuote(t.Command))}, claudeSettings}
		}
		return []Part{{"a shell", "sh", remove + fmt.Sprintf("claude mcp add --scope user --transport http %s %s --header %s\n",
			ServerName, shellQuote(t.URL), shellQuote("Authorization: Bearer "+t.Token))}, claudeSettings}
	}},
	// Codex: http_headers sends the token with no environment variable to
	// export (with bearer_token_env_var unset in the shell, Codex drops the
	// tools silently). default_tools_approval_mode = "approve": `codex exec`
	// refuses every tool without readOnlyHint otherwise ("approval policy is
	// never"); the operator's review is the approval.
	{"codex", "Codex", HTTP, func(tr Transport, t Target) []Part {
		var b strings.Builder
		fmt.Fprintf(&b, "[mcp_servers.%s]\n", ServerName)
		if tr == Stdio {
			fmt.Fprintf(&b, "command = %s\nargs = [\"mcp-stdio\"]\nenv = { %s = %s }\n", tomlString(t.Command), TokenEnv, tomlString(t.Token))
		} else {
			fmt.Fprintf(&b, "url = %s\nhttp_headers = { Authorization = %s }\n", tomlString(t.URL), tomlString("Bearer "+t.Token))
		}
		b.WriteString("default_tools_approval_mode = \"approve\"\n")
		return []Part{{"~/.codex/config.toml", "toml", b.String()}}
	}},
	// opencode keeps MCP servers under "mcp"; a remote server with a
	// header needs no OAuth.
	{"opencode", "opencode", HTTP, func(tr Transport, t Target) []Part {
		srv := map[string]any{"type": "remote", "url": t.URL, "headers": bearerHeader(t.Token)}
		if tr == Stdio {
			srv = map[string]any{"type": "local", "command": []string{t.Command, "mcp-stdio"},
				"environment": map[string]string{TokenEnv: t.Token}}
		}
		return []Part{{"opencode.json (project) or ~/.config/opencode/opencode.json", "json", jsonText(map[string]any{
			"$schema": "https://opencode.ai/config.json",
			"mcp":     map[string]any{ServerName: srv},
		})}}
	}},
	// Gemini CLI: "trust" skips its own confirmation, which `gemini -p`
	// cannot ask.
	{"gemini-cli", "Gemini CLI", HTTP, func(tr Transport, t Target) []Part {
		srv := map[string]any{"httpUrl": t.URL, "headers": bearerHeader(t.Token), "trust": true}
		if tr == Stdio {
			srv = stdioServer(t)
			srv["trust"] = true
		}
		return []Part{{"~/.gemini/settings.json", "json", jsonText(map[string]any{"mcpServers": map[string]any{ServerName: srv}})}}
	}},
	{"cursor", "Cursor", HTTP, func(tr Transport, t Target) []Part {
		srv := map[string]any{"url": t.URL, "headers": bearerHeader(t.Token)}
		if tr == Stdio {
			srv = stdioServer(t)
		}
		return []Part{{"~/.cursor/mcp.json (or .cursor/mcp.json in a project)", "json",
			jsonText(map[string]any{"mcpServers": map[string]any{ServerName: srv}})}}
	}},
	{"vscode", "VS Code", HTTP, func(tr Transport, t Target) []Part {
		srv := map[string]any{"type": "http", "url": t.URL, "headers": bearerHeader(t.Token)}
		if tr == Stdio {
			srv = stdioServer(t)
			srv["type"] = "stdio"
		}
		return []Part{{".vscode/mcp.json", "json", jsonText(map[string]any{"servers": map[string]any{ServerName: srv}})}}
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

// Preferred is the transport connect prints for host when none is asked
// for.
func Preferred(name string) (Transport, error) {
	i := slices.IndexFunc(table, func(h host) bool { return h.name == name })
	if i < 0 {
		return "", unknownHost(name)
	}
	return table[i].preferred, nil
}

// Render returns host's snippet for transport (empty: the host's preferred
// one) and target.
func Render(name string, tr Transport, t Target) (Snippet, error) {
	i := slices.IndexFunc(table, func(h host) bool { return h.name == name })
	if i < 0 {
		return Snippet{}, unknownHost(name)
	}
	h := table[i]
	switch tr {
	case "":
		tr = h.preferred
	case HTTP, Stdio:
	default:
		return Snippet{}, fmt.Errorf("unknown transport %q: use %s or %s", tr, HTTP, Stdio)
	}
	return Snippet{Host: h.name, Title: h.title, Transport: tr, Parts: h.render(tr, t)}, nil
}

func unknownHost(name string) error {
	return fmt.Errorf("unknown host %q: use one of %s", name, strings.Join(Names(), ", "))
}

func bearerHeader(token string) map[string]string {
	return map[string]string{"Authorization": "Bearer " + token}
}

func stdioServer(t Target) map[string]any {
	return map[string]any{"command": t.Command, "args": []string{"mcp-stdio"}, "env": map[string]string{TokenEnv: t.Token}}
}

// jsonText is v as indented JSON; keys come out sorted, so the text is
// stable for the README comparison.
func jsonText(v any) string {
	// Only maps, slices and strings reach here, which always encode.
	b, _ := json.MarshalIndent(v, "", "  ")
	return string(b) + "\n"
}

// tomlString is s as a TOML basic string (JSON's escapes are TOML's).
func tomlString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// shellQuote quotes s for a POSIX shell, leaving plain words bare.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:@%+=,") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
