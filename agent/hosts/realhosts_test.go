package hosts_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tabwarden/tabwarden/agent/demo/fixture"
	"github.com/tabwarden/tabwarden/agent/demo/fixture/fixturetest"
	"github.com/tabwarden/tabwarden/agent/hosts/fakemodel"
)

// The real-hosts test runs Claude Code, Codex, Gemini CLI and opencode, as
// pinned in scripts/hosts and installed by scripts/hosts/install.sh, against
// one real console in a real terminal (tmux). Each host is configured with
// exactly what `tabwarden connect HOST --transport T` prints (merged into the
// file it names, beside the settings that point the host at a loopback fake
// model), runs in its non-interactive mode, and is driven by a fake model
// that speaks its vendor's streaming wire: list tabs, open a fixture page,
// finish. The operator answers each review with one key, or not at all.

// hostsEnv names the directory holding the four hosts' programs. .ci/run
// sets it, and then a missing host fails the test; without it the test
// looks in install.sh's default place and skips when nothing is there.
const hostsEnv = "TABWARDEN_HOSTS_BIN"

func hostsBin(t *testing.T) string {
	t.Helper()
	dir, required := os.Getenv(hostsEnv), true
	if dir == "" {
		required = false
		cache := os.Getenv("XDG_CACHE_HOME")
		if cache == "" {
			home, _ := os.UserHomeDir()
			cache = filepath.Join(home, ".cache")
		}
		dir = filepath.Join(cache, "tabwarden", "hosts", "current", "bin")
	}
	for _, p := range []string{"claude", "codex", "gemini", "opencode"} {
		if _, err := os.Stat(filepath.Join(dir, p)); err != nil {
			if required {
				t.Fatalf("%s=%s lacks %s: %v (scripts/hosts/install.sh installs the hosts)", hostsEnv, dir, p, err)
			}
			t.Skipf("the agent hosts are not installed in %s (scripts/hosts/install.sh)", dir)
		}
	}
	return dir
}

// outcome is what the operator does with a host's review.
type outcome string

const (
	approve outcome = "approve"  // a
	deny    outcome = "deny"     // d
	timeout outcome = "timeout"  // nothing, until --review-timeout
	giveUp  outcome = "gives up" // the host is killed while its review is on screen
)

// hostSpec is how the test configures and runs one host.
type hostSpec struct {
	name string // connect's HOST
	// configure writes the host's configuration: the printed parts,
	// merged into the files they name, and the fake model's settings.
	configure func(r *rig, parts []printedPart)
	argv      []string // the non-interactive command, the prompt appended
	env       func(r *rig) []string
}

var hostSpecs = []hostSpec{
	{
		name: "claude-code",
		configure: func(r *rig, parts []printedPart) {
			r.need(parts, 2, "a shell", "~/.claude/settings.json")
			r.shell(parts[0].text)
			r.mergeJSON(filepath.Join(r.home, ".claude", "settings.json"), parts[1].text, nil)
		},
		argv: []string{"claude", "-p"},
		env: func(r *rig) []string {
			return []string{
				"ANTHROPIC_BASE_URL=" + r.model.URL, "ANTHROPIC_API_KEY=sk-ant-fake",
				"ANTHROPIC_MODEL=claude-sonnet-4-5",
				// The model gets the MCP tools offered directly rather than
				// through Claude Code's ToolSearch.
				"ENABLE_TOOL_SEARCH=false",
				"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1",
				// claude -p waits for its MCP servers before the first
				// model request instead of sending it without their tools
				// (seen on a loaded machine).
				"MCP_CONNECTION_NONBLOCKING=false",
			}
		},
	},
	{
		name: "codex",
		configure: func(r *rig, parts []printedPart) {
			r.need(parts, 1, "~/.codex/config.toml")
			// The model's settings first (top-level keys and their own
			// tables), the printed table last, as a user appends it.
			model := fmt.Sprintf(`model = "fake-model"
model_provider = "fake"
check_for_update_on_startup = false

[model_providers.fake]
name = "fake"
base_url = "%s/v1"
wire_api = "responses"
env_key = "FAKE_API_KEY"

[analytics]
enabled = false

[otel]
metrics_exporter = "none"

[features]
plugins = false
remote_plugin = false
apps = false
in_app_updates = false
skill_mcp_dependency_install = false
tool_suggest = false

`, r.model.URL)
			r.write(filepath.Join(r.home, ".codex", "config.toml"), model+parts[0].text)
		},
		argv: []string{"codex", "exec", "--skip-git-repo-check"},
		env:  func(*rig) []string { return []string{"FAKE_API_KEY=fake"} },
	},
	{
		name: "gemini-cli",
		configure: func(r *rig, parts []printedPart) {
			r.need(parts, 1, "~/.gemini/settings.json")
			r.mergeJSON(filepath.Join(r.home, ".gemini", "settings.json"), parts[0].text, map[string]any{
				"security":  map[string]any{"auth": map[string]any{"selectedType": "gemini-api-key"}},
				"privacy":   map[string]any{"usageStatisticsEnabled": false},
				"telemetry": map[string]any{"enabled": false},
				"general":   map[string]any{"disableAutoUpdate": true, "disableUpdateNag": true},
			})
		},
		argv: []string{"gemini", "-p"},
		env: func(r *rig) []string {
			return []string{"GEMINI_API_KEY=fake", "GOOGLE_GEMINI_BASE_URL=" + r.model.URL, "GEMINI_CLI_TRUST_WORKSPACE=true"}
		},
	},
	{
		name: "opencode",
		configure: func(r *rig, parts []printedPart) {
			r.need(parts, 1, "~/.config/opencode/opencode.json")
			r.mergeJSON(filepath.Join(r.home, ".config", "opencode", "opencode.json"), parts[0].text, map[string]any{
				"model": "fake/fake-model", "autoupdate": false, "share": "disabled",
				"provider": map[string]any{"fake": map[string]any{
					"npm": "@ai-sdk/openai-compatible", "name": "fake",
					"options": map[string]any{"baseURL": r.model.URL + "/v1", "apiKey": "fake"},
					"models":  map[string]any{"fake-model": map[string]any{"name": "fake-model", "tool_call": true}},
				}},
			})
		},
		argv: []string{"opencode", "run"},
		env: func(*rig) []string {
			return []string{"OPENCODE_DISABLE_MODELS_FETCH=1", "OPENCODE_DISABLE_AUTOUPDATE=1",
				"OPENCODE_DISABLE_LSP_DOWNLOAD=1", "OPENCODE_DISABLE_DEFAULT_PLUGINS=1", "OPENCODE_DISABLE_SHARE=1"}
		},
	},
}

// allowedEgress are the refused network attempts a host makes with no
// setting to turn them off; the proxy refuses them, so nothing leaves.
var allowedEgress = map[string][]string{
	// opencode installs @opencode-ai/plugin into its configuration
	// directory in the background on every start and carries on when that
	// fails.
	"opencode": {"CONNECT registry.npmjs.org:443"},
}

// matrix is, per transport, the hosts that run one after another against
// the one console, each through approve, deny, timeout and give-up. Claude
// Code goes first: its sessionless conversation never ends, so every later
// host's review needs the console to bring it on screen by itself (no
// review waits unseen), as do the reviews after a killed host's, whose
// session stays until it idles out.
var matrix = []struct {
	transport string
	hosts     []string
}{
	{"http", []string{"claude-code", "codex", "gemini-cli", "opencode"}},
	{"stdio", []string{"claude-code", "codex", "gemini-cli", "opencode"}},
}

// fullMatrixEnv set to 1 runs every host through every outcome. Without
// it each host opens its reviewed page (approve) and only Codex, the
// quickest to start, also goes through deny, timeout and give-up: the
// whole matrix is about eight minutes on a 2-core machine, more than CI's
// budget gives one package, while the gates it checks are the console's,
// the same for every host (the closing figures come from a full run).
const fullMatrixEnv = "TABWARDEN_HOSTS_FULL_MATRIX"

func outcomesFor(host string) []outcome {
	if os.Getenv(fullMatrixEnv) == "1" || host == "codex" {
		return []outcome{approve, deny, timeout, giveUp}
	}
	return []outcome{approve}
}

// TestRealHostsOpenReviewedPages: per transport, the hosts one after
// another against one console: each opens a reviewed page (0 requests
// before `a`, the page after), is denied, is left to time out, and gives
// up (killed) with its review on screen. The review always comes on screen
// by itself: no key but the decision is pressed. Nothing reaches the
// network. Each host × transport × outcome is a subtest, so one failure
// still lets the rest report.
func TestRealHostsOpenReviewedPages(t *testing.T) {
	bin := hostsBin(t)
	r := startRig(t, bin)
	var table []string
	for _, m := range matrix {
		for _, name := range m.hosts {
			i := slices.IndexFunc(hostSpecs, func(h hostSpec) bool { return h.name == name })
			h := hostSpecs[i]
			configured := false
			for _, oc := range outcomesFor(h.name) {
				result := "failed"
				t.Run(fmt.Sprintf("%s/%s/%s", m.transport, h.name, oc), func(t *testing.T) {
					r.t = t
					if !configured {
						r.connect(h, m.transport)
						configured = true
					}
					result = r.runHost(h, m.transport, oc)
				})
				table = append(table, fmt.Sprintf("| %s | %s | %s | %s |", h.name, m.transport, oc, result))
			}
		}
	}
	r.t = t
	t.Logf("host × transport × outcome:\n| host | transport | operator | result |\n|---|---|---|---|\n%s", strings.Join(table, "\n"))
}

type rig struct {
	t        *testing.T
	tw       string // the tabwarden binary
	hostsBin string
	home     string
	name     string // tmux session
	socket   string // tmux server of the running console: one per start
	starts   int
	site     *fixture.Server
	model    *fakemodel.Server
	egress   *fakemodel.Egress
	audit    string
	runs     int

	reviewTimeout string // the console's --review-timeout
}

// startRig builds tabwarden, starts the fixture site, the fake model, the
// refusing proxy and the console (headless, in tmux, --review-timeout 10s)
// with a HOME of its own, which the hosts share, as one user's programs do.
func startRig(t *testing.T, hostsBin string) *rig { return startRigWith(t, hostsBin, "10s") }

var rigs int

// startRigWith is startRig with the console's --review-timeout.
func startRigWith(t *testing.T, hostsBin, reviewTimeout string) *rig {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("tmux is not installed; CI installs it (scripts/deps.sh)")
		}
		t.Skip("tmux is not installed (make deps installs it)")
	}
	fixturetest.NeedChromium(t)
	rigs++
	r := &rig{t: t, hostsBin: hostsBin, home: t.TempDir(), name: fmt.Sprintf("twhosts%d-%d", os.Getpid(), rigs), reviewTimeout: reviewTimeout}
	r.tw = filepath.Join(t.TempDir(), "tabwarden")
	build := exec.CommandContext(t.Context(), "go", "build", "-o", r.tw, "../../cmd/tabwarden")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build tabwarden: %v\n%s", err, out)
	}
	r.site = fixturetest.Start(t)
	var err error
	if r.model, err = fakemodel.Start(fakemodel.Script{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.model.Close)
	if r.egress, err = fakemodel.StartEgress(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.egress.Close)
	_ = os.MkdirAll(filepath.Join(r.home, "run"), 0o700)
	r.audit = filepath.Join(r.home, "audit.jsonl")
	t.Cleanup(r.quit)
	r.startConsole()
	return r
}

// startConsole starts the console in its tmux terminal and waits for its
// screen.
func (r *rig) startConsole() {
	r.t.Helper()
	cmdline := fmt.Sprintf("env %s %s --headless --review-delay 300ms --review-timeout %s --audit %s --profile %s; echo TWEXIT=$?; sleep 600",
		strings.Join(append(r.userEnv(), "TERM=xterm-256color"), " "), r.tw, r.reviewTimeout, r.audit, filepath.Join(r.home, "profile"))
	// A server of its own for each start: the one quit ended may still be
	// going away, and a client reaching it fails ("server exited
	// unexpectedly").
	r.starts++
	r.socket = fmt.Sprintf("%s-%d", r.name, r.starts)
	r.tmux("new-session", "-d", "-s", r.name, "-x", "120", "-y", "40", cmdline)
	r.waitScreen("the console's screen", 40*time.Second, func(s string) bool { return strings.Contains(s, "No review on screen") })
}

// quit quits the console as the operator does (q, then y for the live
// conversations) and waits for it to exit, so Chromium is gone before the
// test removes the profile; then it ends the tmux server.
func (r *rig) quit() {
	defer func() { _ = exec.CommandContext(context.Background(), "tmux", "-L", r.socket, "kill-server").Run() }()
	tmux := func(args ...string) {
		_ = exec.CommandContext(context.Background(), "tmux", append([]string{"-L", r.socket}, args...)...).Run()
	}
	tmux("send-keys", "-t", r.name, "q")
	time.Sleep(300 * time.Millisecond)
	tmux("send-keys", "-t", r.name, "y")
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		out, _ := exec.CommandContext(context.Background(), "tmux", "-L", r.socket, "capture-pane", "-p", "-t", r.name).Output()
		if strings.Contains(string(out), "TWEXIT=") {
			return
		}
	}
}

// userEnv is the environment every program of the user gets: the console,
// `tabwarden connect` and the hosts.
func (r *rig) userEnv() []string {
	return []string{
		"HOME=" + r.home, "XDG_RUNTIME_DIR=" + filepath.Join(r.home, "run"),
		"XDG_STATE_HOME=" + filepath.Join(r.home, ".local", "state"),
		"XDG_DATA_HOME=" + filepath.Join(r.home, ".local", "share"),
		"XDG_CONFIG_HOME=" + filepath.Join(r.home, ".config"),
		"XDG_CACHE_HOME=" + filepath.Join(r.home, ".cache"),
		"PATH=" + r.hostsBin + string(os.PathListSeparator) + os.Getenv("PATH"),
	}
}

func (r *rig) tmux(args ...string) {
	r.t.Helper()
	if out, err := exec.CommandContext(r.t.Context(), "tmux", append([]string{"-L", r.socket}, args...)...).CombinedOutput(); err != nil {
		r.t.Fatalf("tmux %v: %v %s", args, err, out)
	}
}

func (r *rig) screen() string {
	out, _ := exec.CommandContext(r.t.Context(), "tmux", "-L", r.socket, "capture-pane", "-p", "-J", "-t", r.name).Output()
	return string(out)
}

func (r *rig) waitScreen(what string, limit time.Duration, ok func(string) bool) string {
	r.t.Helper()
	deadline := time.Now().Add(limit)
	for {
		s := r.screen()
		if ok(s) {
			return s
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("the screen never showed %s:\n%s", what, s)
		}
		time.Sleep(150 * time.Millisecond)
	}
}

// printedPart is one "In WHERE:" block of connect's output.
type printedPart struct{ where, text string }

// connect runs `tabwarden connect HOST --transport T` as the user would and
// configures the host with exactly what it printed.
func (r *rig) connect(h hostSpec, transport string) {
	r.t.Helper()
	cmd := exec.CommandContext(r.t.Context(), r.tw, "connect", h.name, "--transport", transport)
	cmd.Env = r.userEnv()
	out, err := cmd.Output()
	if err != nil {
		r.t.Fatalf("tabwarden connect %s --transport %s: %v\n%s", h.name, transport, err, out)
	}
	parts := parsePrinted(string(out))
	if len(parts) == 0 {
		r.t.Fatalf("connect %s printed no part:\n%s", h.name, out)
	}
	h.configure(r, parts)
}

// parsePrinted splits connect's output into its parts: a line "In WHERE:",
// a blank line, then the part up to the next blank line (no part holds
// one).
func parsePrinted(out string) []printedPart {
	lines := strings.Split(out, "\n")
	var parts []printedPart
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		if !strings.HasPrefix(l, "In ") || !strings.HasSuffix(l, ":") || i+1 >= len(lines) || lines[i+1] != "" {
			continue
		}
		p := printedPart{where: strings.TrimSuffix(strings.TrimPrefix(l, "In "), ":")}
		j := i + 2
		for ; j < len(lines) && lines[j] != ""; j++ {
			p.text += lines[j] + "\n"
		}
		parts = append(parts, p)
		i = j
	}
	return parts
}

func (r *rig) need(parts []printedPart, n int, where ...string) {
	r.t.Helper()
	if len(parts) != n {
		r.t.Fatalf("connect printed %d parts, want %d: %+v", len(parts), n, parts)
	}
	for i, w := range where {
		if !strings.Contains(parts[i].where, w) {
			r.t.Fatalf("part %d goes in %q, want %q", i, parts[i].where, w)
		}
	}
}

// shell runs a printed shell line as the user does, in sh.
func (r *rig) shell(line string) {
	r.t.Helper()
	cmd := exec.CommandContext(r.t.Context(), "sh", "-c", line)
	cmd.Env = r.userEnv()
	cmd.Dir = r.home
	if out, err := cmd.CombinedOutput(); err != nil {
		r.t.Fatalf("sh -c %q: %v\n%s", line, err, out)
	}
}

func (r *rig) write(path, text string) {
	r.t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		r.t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		r.t.Fatal(err)
	}
}

// mergeJSON writes base with the printed JSON merged in (objects key by
// key, the printed value winning), as a user pastes a snippet into the
// settings they have.
func (r *rig) mergeJSON(path, printed string, base map[string]any) {
	r.t.Helper()
	var p map[string]any
	if err := json.Unmarshal([]byte(printed), &p); err != nil {
		r.t.Fatalf("the printed JSON for %s: %v\n%s", path, err, printed)
	}
	merged := merge(maps.Clone(base), p)
	b, _ := json.MarshalIndent(merged, "", "  ")
	r.write(path, string(b)+"\n")
}

func merge(dst, src map[string]any) map[string]any {
	if dst == nil {
		dst = map[string]any{}
	}
	for k, v := range src {
		dm, ok1 := dst[k].(map[string]any)
		sm, ok2 := v.(map[string]any)
		if ok1 && ok2 {
			dst[k] = merge(maps.Clone(dm), sm)
			continue
		}
		dst[k] = v
	}
	return dst
}

// auditLines returns the audit log's records.
func (r *rig) auditLines() []map[string]any {
	f, err := os.Open(r.audit)
	if err != nil {
		r.t.Fatalf("audit log: %v", err)
	}
	defer f.Close()
	var out []map[string]any
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var m map[string]any
		if json.Unmarshal(sc.Bytes(), &m) == nil {
			out = append(out, m)
		}
	}
	return out
}

// pageRequests counts the fixture's requests for this run's page.
func (r *rig) pageRequests(query string) int {
	n := 0
	for _, q := range r.site.Requests() {
		if q.Path == "/index.html" && q.Query == query {
			n++
		}
	}
	return n
}

// hostProc is a running host.
type hostProc struct {
	cmd    *exec.Cmd
	out    *bytes.Buffer
	exited chan error
}

// startHost starts host h non-interactively on prompt, in a directory of
// its own and a process group of its own, with the user's environment,
// the refusing proxy and h's model settings; extra entries override.
func (r *rig) startHost(ctx context.Context, h hostSpec, prompt string, extra ...string) *hostProc {
	r.t.Helper()
	argv := append(slices.Clone(h.argv), prompt)
	cmd := exec.CommandContext(ctx, filepath.Join(r.hostsBin, argv[0]), argv[1:]...)
	cmd.Dir = r.t.TempDir()
	cmd.Env = append(append(append(r.userEnv(), r.egress.Env()...), h.env(r)...), extra...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	p := &hostProc{cmd: cmd, out: &bytes.Buffer{}, exited: make(chan error, 1)}
	cmd.Stdout, cmd.Stderr = p.out, p.out
	if err := cmd.Start(); err != nil {
		r.t.Fatalf("%s: start: %v", h.name, err)
	}
	go func() { p.exited <- cmd.Wait() }()
	return p
}

// runHost runs host h once with the operator doing oc, checks what the
// console, the site, the audit log and the model saw, and returns the
// outcome the model was told.
func (r *rig) runHost(h hostSpec, transport string, oc outcome) string {
	t := r.t
	t.Helper()
	r.runs++
	query := fmt.Sprintf("run=%d", r.runs)
	url := r.site.URL + "/index.html?" + query
	label := fmt.Sprintf("%s %s %s", h.name, transport, oc)
	r.model.SetScript(fakemodel.Script{
		Steps: []fakemodel.Step{{Tool: "browser_tabs"}, {Tool: "browser_open", Args: map[string]any{"url": url}}},
		Final: "Finished " + label + ".",
	})
	egressBefore := len(r.egress.Targets())
	auditBefore := len(r.auditLines())

	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	p := r.startHost(ctx, h, "Open the fixture page "+url+" in the browser.")
	cmd, out, exited := p.cmd, p.out, p.exited
	started := time.Now()
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("%s: %s\nhost output:\n%s\nmodel requests: %+v\nunknown model paths: %v\nscreen:\n%s",
			label, fmt.Sprintf(format, args...), out.String(), r.model.Requests(), r.model.Unknown(), r.screen())
	}

	// The review comes on screen by itself: nothing but the decision key
	// is pressed.
	onScreen := func(s string) bool { return strings.Contains(s, "Allow origin in this tab") }
	deadline := time.Now().Add(90 * time.Second)
	for !onScreen(r.screen()) {
		select {
		case err := <-exited:
			fail("the host ended (%v) before its review came on screen", err)
		default:
		}
		if time.Now().After(deadline) {
			fail("its review never came on screen")
		}
		time.Sleep(150 * time.Millisecond)
	}
	if n := r.pageRequests(query); n != 0 {
		fail("the page had %d requests before the operator decided", n)
	}
	// --review-delay: a key in the first 300 ms is ignored on purpose.
	time.Sleep(400 * time.Millisecond)
	switch oc {
	case approve:
		r.tmux("send-keys", "-t", r.name, "a")
	case deny:
		r.tmux("send-keys", "-t", r.name, "d")
	case giveUp:
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	var exitErr error
	select {
	case exitErr = <-exited:
	case <-ctx.Done():
		fail("the host did not finish")
	}
	r.waitScreen("the review gone", 30*time.Second, func(s string) bool { return !onScreen(s) })
	elapsed := time.Since(started)
	// A host that gives up is gone: its review is withdrawn, canceled, or,
	// when the relay's exit ends its conversation first, tab_closed.
	gone := []string{"canceled", "tab_closed"}
	if oc == giveUp {
		// The console says the host left: its review was withdrawn.
		r.waitScreen("the withdrawn review in the activity log", 10*time.Second, func(s string) bool {
			return strings.Contains(s, "review canceled: navigation "+r.site.URL) || strings.Contains(s, "review tab_closed: navigation "+r.site.URL)
		})
	}

	// What the site saw.
	pages := r.pageRequests(query)
	if (oc == approve) != (pages > 0) {
		fail("the page had %d requests after %s", pages, oc)
	}
	// What the audit log says about this run's review.
	var decision map[string]any
	for _, rec := range r.auditLines()[auditBefore:] {
		if rec["kind"] == "decision" && rec["gate"] == "navigation" {
			decision = rec
		}
	}
	wantDecision := map[outcome][]string{approve: {"approved"}, deny: {"denied"}, timeout: {"timeout"}, giveUp: gone}[oc]
	if decision == nil || !slices.Contains(wantDecision, fmt.Sprint(decision["decision"])) {
		fail("the audit's decision for the review is %v, want one of %q", decision, wantDecision)
	}
	// What the model was told: the host carried the result back.
	result := "host killed, no result"
	if oc != giveUp {
		if exitErr != nil {
			fail("the host failed: %v", exitErr)
		}
		res := r.model.Results()
		if len(res) != 2 {
			fail("the model got %d tool results, want 2: %q", len(res), res)
		}
		flat := strings.ReplaceAll(res[1], `\`, "")
		want := map[outcome]string{approve: `"ok":true`, deny: `"code":"user_denied"`, timeout: `"code":"timeout"`}[oc]
		if !strings.Contains(flat, want) {
			fail("browser_open's result as the model got it lacks %s: %s", want, res[1])
		}
		if !strings.Contains(out.String(), "Finished "+label) {
			fail("the host did not print the model's final text")
		}
		result = want
	}
	// Nothing reached the network.
	for _, target := range r.egress.Targets()[egressBefore:] {
		if !slices.Contains(allowedEgress[h.name], target) {
			fail("the host tried to reach the network: %s", target)
		}
	}
	t.Logf("%s: %s in %s", label, result, elapsed.Round(100*time.Millisecond))
	return result
}

func spec(name string) hostSpec {
	i := slices.IndexFunc(hostSpecs, func(h hostSpec) bool { return h.name == name })
	return hostSpecs[i]
}

// tabIDIn finds the first "tabId":"…" in a tool result as a host relayed it.
func tabIDIn(result string) string {
	flat := strings.ReplaceAll(result, `\`, "")
	_, rest, ok := strings.Cut(flat, `"tabId":"`)
	if !ok {
		return ""
	}
	id, _, _ := strings.Cut(rest, `"`)
	return id
}

// Two Claude Code processes at once, both configured by the one `tabwarden
// connect claude-code` (the relay form it prints): two conversations. The
// first opens a page (approved) and stays at work, its next review on
// screen; the second's browser_tabs does not list the first's tab, and
// reading that tab is wrong_conversation.
func TestTwoClaudeCodeProcessesAreTwoConversations(t *testing.T) {
	bin := hostsBin(t)
	r := startRigWith(t, bin, "60s")
	claude := spec("claude-code")
	r.connect(claude, "stdio")

	first := r.site.URL + "/index.html?first"
	r.model.SetScript(fakemodel.Script{Steps: []fakemodel.Step{
		{Tool: "browser_open", Args: map[string]any{"url": first}},
		{Tool: "browser_open", Args: map[string]any{"url": r.site.URL + "/index.html?first-again"}},
	}, Final: "First done."})
	other, err := fakemodel.Start(fakemodel.Script{})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()

	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
	defer cancel()
	a := r.startHost(ctx, claude, "Open "+first+".")
	onScreen := func(s string) bool { return strings.Contains(s, "Allow origin in this tab") }
	r.waitScreen("the first claude's review", 90*time.Second, onScreen)
	time.Sleep(400 * time.Millisecond) // --review-delay
	r.tmux("send-keys", "-t", r.name, "a")
	// The first's open returned; its next open waits on screen, so the
	// process is still at work while the second runs.
	var tab string
	for deadline := time.Now().Add(60 * time.Second); tab == ""; time.Sleep(200 * time.Millisecond) {
		if res := r.model.Results(); len(res) > 0 {
			if tab = tabIDIn(res[0]); tab == "" {
				t.Fatalf("the first open's result has no tabId: %s", res[0])
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the first claude's open never returned:\n%s", a.out)
		}
	}

	other.SetScript(fakemodel.Script{Steps: []fakemodel.Step{
		{Tool: "browser_tabs"},
		{Tool: "browser_observe", Args: map[string]any{"tabId": tab}},
	}, Final: "Second done."})
	b := r.startHost(ctx, claude, "List the tabs and read "+tab+".", "ANTHROPIC_BASE_URL="+other.URL)
	select {
	case err := <-b.exited:
		if err != nil {
			t.Fatalf("the second claude: %v\n%s", err, b.out)
		}
	case <-ctx.Done():
		t.Fatalf("the second claude did not finish:\n%s", b.out)
	}
	res := other.Results()
	if len(res) != 2 {
		t.Fatalf("the second claude's model got %d results: %q\n%s", len(res), res, b.out)
	}
	if !strings.Contains(strings.ReplaceAll(res[0], `\`, ""), `"ok":true`) || strings.Contains(res[0], tab) {
		t.Errorf("the second claude's browser_tabs lists the first's tab %s (or failed): %s", tab, res[0])
	}
	if !strings.Contains(strings.ReplaceAll(res[1], `\`, ""), `"code":"wrong_conversation"`) {
		t.Errorf("the second claude read the first's tab: %s", res[1])
	}
	if n := strings.Count(r.screen(), "claude-code · claude-code ·"); n < 2 {
		t.Errorf("the console lists %d claude-code conversations, want 2:\n%s", n, r.screen())
	}

	// The first is still waiting on its second review: deny it, and it ends.
	r.waitScreen("the first claude's second review", 30*time.Second, onScreen)
	r.tmux("send-keys", "-t", r.name, "d")
	select {
	case err := <-a.exited:
		if err != nil {
			t.Fatalf("the first claude: %v\n%s", err, a.out)
		}
	case <-ctx.Done():
		t.Fatalf("the first claude did not finish:\n%s", a.out)
	}
	if got := r.model.Results(); len(got) != 2 || !strings.Contains(strings.ReplaceAll(got[1], `\`, ""), "user_denied") {
		t.Errorf("the first claude's second open: %q", got)
	}
}

// A host configured before the console restarts connects after it, with
// no new configuration: Codex over HTTP (the URL and token it was given)
// and Claude Code through the relay.
func TestHostsConfiguredBeforeARestartConnect(t *testing.T) {
	bin := hostsBin(t)
	r := startRig(t, bin)
	r.connect(spec("codex"), "http")
	r.connect(spec("claude-code"), "stdio")
	r.runHost(spec("codex"), "http", approve)

	r.quit()
	r.startConsole()
	r.runHost(spec("codex"), "http", approve)
	r.runHost(spec("claude-code"), "stdio", approve)
}
