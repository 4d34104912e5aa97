package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tabwarden/tabwarden/internal/stacktest"
	"github.com/tabwarden/tabwarden/tui/sshconsole/sshtest"
)

func freeLoopbackPort(t testing.TB) string {
	t.Helper()
	ln, err := (&net.ListenConfig{}).Listen(context.Background(), "tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// No agent token, and no operator secret, on any screen, in the log, the
// audit or any agent's result (design.md §3): the real console in tmux with an
// SSH operator, a token minted by `tabwarden connect`, an agent that opens
// a reviewed page with it, a call with a wrong token. Every byte the local
// pane and the SSH session received, both screens, the console's log, the
// audit and every MCP result are searched for each secret.
func TestTmuxSecretsNeverShown(t *testing.T) {
	dir := t.TempDir()
	ana := sshtest.NewKey(t, "ana")
	keys := filepath.Join(dir, "operators")
	sshtest.WriteAuthorizedKeys(t, keys, ana)
	sshAddr := freeLoopbackPort(t)
	pipe := filepath.Join(dir, "pane.bytes")
	c, home, ep := startPageConsole(t, pageConsole{
		name: fmt.Sprintf("twsecret%d", os.Getpid()), cols: 160, rows: 40, agent: "default-agent", pipe: pipe,
		flags: "--ssh-listen " + sshAddr + " --ssh-authorized-keys " + keys,
	})
	// The console is still starting in tmux: dial until it listens.
	ssh := sshtest.Attach(t, sshAddr, ana, sshtest.Options{User: "ana", Width: 160, Height: 40, DialFor: 20 * time.Second})
	ssh.WaitFor("tabwarden")

	env := append(os.Environ(), "HOME="+home, "XDG_STATE_HOME="+filepath.Join(home, "state"), "XDG_RUNTIME_DIR="+filepath.Join(home, "run"))
	cmd := exec.CommandContext(t.Context(), binPath, "connect", "claude-code", "--json")
	cmd.Env = env
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	var minted struct{ Token, URL string }
	if err := json.Unmarshal(out, &minted); err != nil || !strings.HasPrefix(minted.Token, "tw_") {
		t.Fatalf("connect printed no token: %v %s", err, out)
	}
	secrets := map[string]string{"connect's token": minted.Token, "default token": ep.Token, "operator secret": ep.Operator}

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var results []string
	c.cs = stacktest.Connect(t, minted.URL, minted.Token, sessionlessProtocol, "claude-code")
	r := c.openApproved(ctx, c.site.URL+"/e2e/act.html")
	b, _ := json.Marshal(r)
	results = append(results, string(b))
	tabs := pageResult(t, c.call(ctx, "browser_tabs", map[string]any{}))
	observed := c.call(ctx, "browser_observe", map[string]any{})
	c.waitText("Allow reading this origin")
	time.Sleep(500 * time.Millisecond) // the review delay
	c.keys("a")
	for _, res := range []map[string]any{tabs, pageResult(t, observed)} {
		b, _ := json.Marshal(res)
		results = append(results, string(b))
	}
	// A wrong token is refused; the refusal shows nowhere with a token in it.
	client := mcp.NewClient(&mcp.Implementation{Name: "wrong-token", Version: "1.0"}, nil)
	tr := &mcp.StreamableClientTransport{Endpoint: minted.URL, HTTPClient: &http.Client{Transport: stacktest.Bearer{Secret: minted.Token + "x"}}, MaxRetries: -1}
	if bad, err := client.Connect(ctx, tr, nil); err == nil {
		_ = bad.Close()
		t.Fatal("a wrong token connected")
	} else {
		results = append(results, err.Error())
	}
	ssh.WaitFor("claude-code")
	c.waitText("claude-code")

	raw, sshScr := ssh.Raw(), ssh.Text()
	logData, _ := os.ReadFile(filepath.Join(home, "state", "tabwarden", "tabwarden.log"))
	// The audit is flushed per record; the log may still be in the kernel.
	auditData, _ := os.ReadFile(filepath.Join(home, "audit.jsonl"))
	paneData, _ := os.ReadFile(pipe)
	places := map[string]string{
		"SSH bytes": raw, "SSH screen": sshScr, "local screen": c.screen(false), "local pane bytes": string(paneData),
		"log": string(logData), "audit": string(auditData), "MCP results": strings.Join(results, "\n"),
	}
	if len(auditData) == 0 || len(paneData) == 0 || len(raw) == 0 {
		t.Fatalf("nothing to search: audit %d bytes, pane %d, SSH %d", len(auditData), len(paneData), len(raw))
	}
	for what, secret := range secrets {
		if len(secret) < 20 {
			t.Fatalf("%s is too short to search for: %q", what, secret)
		}
		// Half the secret is enough to give it away; a screen may wrap it.
		part := secret[len(secret)/2:]
		for where, text := range places {
			if strings.Contains(text, part) {
				t.Errorf("the %s shows in the %s", what, where)
			}
		}
	}
	if t.Failed() {
		t.Logf("local screen:\n%s\nSSH screen:\n%s", c.screen(false), sshScr)
	}
}
