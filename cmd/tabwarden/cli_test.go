package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tabwarden/tabwarden/agent"
	"github.com/tabwarden/tabwarden/consent/audit"
	"github.com/tabwarden/tabwarden/internal/displaytest"
)

// The CLI is tested as operators and scripts use it: one binary, built once,
// run as a process; assertions are on exit codes and on what it says.

const testVersion = "v0.0.0-clitest"

var binPath string

func TestMain(m *testing.M) {
	os.Exit(buildAndRun(m))
}

func buildAndRun(m *testing.M) int {
	dir, err := os.MkdirTemp("", "tabwarden-cli")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	binPath = filepath.Join(dir, "tabwarden")
	build := exec.CommandContext(context.Background(), "go", "build", "-o", binPath,
		"-ldflags", "-X main.version="+testVersion+" -X main.commit=abc1234", ".")
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build tabwarden:", err)
		return 1
	}
	return m.Run()
}

type result struct {
	stdout, stderr string
	code           int
}

// run executes the binary with a private HOME and XDG dirs so no test reads
// or writes the developer's real state; extraEnv entries override.
func run(t *testing.T, extraEnv []string, args ...string) result {
	t.Helper()
	home := t.TempDir()
	if err := os.Mkdir(filepath.Join(home, "tmp"), 0o700); err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(t.Context(), binPath, args...)
	cmd.Env = append([]string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + home,
		"XDG_STATE_HOME=" + filepath.Join(home, "state"),
		"XDG_DATA_HOME=" + filepath.Join(home, "data"),
		// With no runtime directory a console publishes, and the CLI
		// looks, in the user's shared <tmp>/tabwarden-UID: another
		// console (another test's, or one the person runs) must not be
		// found there.
		"TMPDIR=" + filepath.Join(home, "tmp"),
	}, extraEnv...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("run %v: %v", args, err)
	}
	return result{out.String(), errb.String(), code}
}

func (r result) wantCode(t *testing.T, code int) {
	t.Helper()
	if r.code != code {
		t.Fatalf("exit code %d, want %d\nstdout:\n%s\nstderr:\n%s", r.code, code, r.stdout, r.stderr)
	}
}

func contains(t *testing.T, what, s string, subs ...string) {
	t.Helper()
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			t.Errorf("%s lacks %q:\n%s", what, sub, s)
		}
	}
}

func lacks(t *testing.T, what, s string, subs ...string) {
	t.Helper()
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			t.Errorf("%s has %q:\n%s", what, sub, s)
		}
	}
}

func policyFile(name string) string { return filepath.Join("..", "..", "testdata", "policies", name) }

func TestPolicyCheckMergesFiles(t *testing.T) {
	r := run(t, nil, "policy", "check", policyFile("valid.json"), policyFile("valid.yaml"), policyFile("uploads-only.yml"))
	r.wantCode(t, 0)
	// Origins intersect: only a.example and bücher.example are in both lists.
	contains(t, "merged policy", r.stdout,
		"3 files",
		"Browser origins: 2 allowed",
		"https://a.example",
		"https://xn--bcher-kva.example",
		"Browser uploads: blocked", // OR: valid.json allows, the others block
		"at most thread",           // the stricter consent floor wins
	)
	lacks(t, "merged policy", r.stdout, "c.example", "localhost:8080", "[::1]")
	if r.stderr != "" {
		t.Errorf("stderr on success: %s", r.stderr)
	}
}

func TestPolicyCheckSingleFileNormalizes(t *testing.T) {
	r := run(t, nil, "policy", "check", policyFile("valid.json"))
	r.wantCode(t, 0)
	contains(t, "policy", r.stdout, "Browser origins: 4 allowed", "https://a.example\n", "Browser uploads: allowed")
	lacks(t, "policy", r.stdout, "A.Example", ":443")
}

func TestPolicyCheckEmptyListBlocksEverything(t *testing.T) {
	r := run(t, nil, "policy", "check", policyFile("valid.yaml"), policyFile("no-websites.json"))
	r.wantCode(t, 0)
	contains(t, "policy", r.stdout, "none allowed")
}

const msgInvalidOrigin = "Use an HTTP or HTTPS site without a path, credentials, or query."

func TestPolicyCheckRejectsEachInvalidKind(t *testing.T) {
	for _, tc := range []struct {
		kind, file string
		want       []string
	}{
		{"path", "invalid-path.json", []string{msgInvalidOrigin, "https://a.example/x"}},
		{"credentials", "invalid-credentials.json", []string{msgInvalidOrigin, "user:secret@a.example"}},
		{"query", "invalid-query.json", []string{msgInvalidOrigin, "?q=1"}},
		{"hash", "invalid-hash.json", []string{msgInvalidOrigin, "#top"}},
		{"non-http scheme", "invalid-scheme.yaml", []string{msgInvalidOrigin, "ftp://a.example"}},
		{"more than 100 entries", "too-many.json", []string{"A policy can list at most 100 browser origins."}},
		{"unknown key", "unknown-key.yaml", []string{"blockUploads"}},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			path := policyFile(tc.file)
			r := run(t, nil, "policy", "check", policyFile("valid.yaml"), path)
			r.wantCode(t, 2)
			contains(t, "stderr", r.stderr, append([]string{path}, tc.want...)...)
			if r.stdout != "" {
				t.Errorf("an invalid policy printed a merged result:\n%s", r.stdout)
			}
		})
	}
}

func TestPolicyCheckReportsEveryProblem(t *testing.T) {
	dir := t.TempDir()
	a := filepath.Join(dir, "a.json")
	b := filepath.Join(dir, "b.yaml")
	if err := os.WriteFile(a, []byte(`{"execution":{"browserOrigins":["https://ok.example","https://x.example/path","http://u:p@y.example"]}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(b, []byte("execution:\n  browserOrigins: [\"ftp://z.example\"]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := run(t, nil, "policy", "check", a, b)
	r.wantCode(t, 2)
	contains(t, "stderr", r.stderr, "https://x.example/path", "u:p@y.example", "ftp://z.example", a, b)
	if n := strings.Count(r.stderr, msgInvalidOrigin); n != 3 {
		t.Errorf("%d problems reported, want 3:\n%s", n, r.stderr)
	}
}

func TestPolicyCheckNeedsAFile(t *testing.T) {
	run(t, nil, "policy", "check").wantCode(t, 2)
	r := run(t, nil, "policy", "check", filepath.Join(t.TempDir(), "missing.json"))
	r.wantCode(t, 2)
	contains(t, "stderr", r.stderr, "missing.json")
}

func TestInvalidConsentProfile(t *testing.T) {
	r := run(t, nil, "--consent", "yolo")
	r.wantCode(t, 2)
	contains(t, "stderr", r.stderr, "--consent 'yolo'", "strict, thread or trusted")
	// Global flags are validated for every command.
	run(t, nil, "--consent", "", "version").wantCode(t, 2)
}

func TestReviewDelayMinimum(t *testing.T) {
	for _, v := range []string{"249ms", "0", "-1s"} {
		r := run(t, nil, "--review-delay", v)
		r.wantCode(t, 2)
		contains(t, "stderr "+v, r.stderr, "--review-delay", "250ms")
	}
	run(t, nil, "--review-delay", "soon").wantCode(t, 2)
	// The minimum itself is accepted (the command then runs: version prints).
	run(t, nil, "--review-delay", "250ms", "version").wantCode(t, 0)
}

func TestMCPListenIsLoopbackOnly(t *testing.T) {
	for _, v := range []string{"0.0.0.0:8080", "192.0.2.1:80", ":8080", "localhost", "[::1]:7777"} {
		r := run(t, nil, "--mcp-listen", v, "version")
		r.wantCode(t, 2)
		contains(t, "stderr "+v, r.stderr, "--mcp-listen")
	}
	for _, v := range []string{"127.0.0.1:0", "127.0.0.2:7777", "localhost:7777", "LOCALHOST:7777"} {
		run(t, nil, "--mcp-listen", v, "version").wantCode(t, 0)
	}
}

func TestUsageErrors(t *testing.T) {
	run(t, nil, "frobnicate").wantCode(t, 2)
	run(t, nil, "--no-such-flag").wantCode(t, 2)
	run(t, nil, "version", "extra").wantCode(t, 2)
	run(t, nil, "--browser-url", "not a url", "version").wantCode(t, 2)
}

func TestConsoleRejectsBadInputBeforeStarting(t *testing.T) {
	r := run(t, nil, "--policy", policyFile("invalid-path.json"))
	r.wantCode(t, 2)
	contains(t, "stderr", r.stderr, msgInvalidOrigin, "nothing was started")

	bad := filepath.Join(t.TempDir(), "bad.jsonl")
	if err := os.WriteFile(bad, []byte(`{"conversation":"c1","tab":"t1","gate":"teleport","origin":"https://a.test"}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r = run(t, nil, "--script", bad)
	r.wantCode(t, 2)
	contains(t, "stderr", r.stderr, "bad.jsonl:1", "teleport")
}

func TestConsoleNeedsATerminal(t *testing.T) {
	r := run(t, nil) // stdin/stdout are not terminals under go test
	r.wantCode(t, 1)
	contains(t, "stderr", r.stderr, "needs a terminal")
}

// The demo is headed so the operator can sign in by hand; without a display
// it must say how to get one instead of failing somewhere inside Chromium.
func TestDemoWithoutDisplayNamesTheFixes(t *testing.T) {
	r := run(t, nil, "demo")
	r.wantCode(t, 1)
	contains(t, "stderr", r.stderr, "xvfb-run -a", "ssh -X", "--headless")
	if r.stdout != "" {
		t.Errorf("demo printed output as if it ran:\n%s", r.stdout)
	}
}

func TestVersion(t *testing.T) {
	r := run(t, nil, "version")
	r.wantCode(t, 0)
	contains(t, "version", r.stdout, "tabwarden "+testVersion, "commit: abc1234", runtime.Version())
	// --version, which people try first, says the same.
	flag := run(t, nil, "--version")
	flag.wantCode(t, 0)
	if flag.stdout != r.stdout {
		t.Errorf("--version printed %q, version printed %q", flag.stdout, r.stdout)
	}
}

func TestCompletion(t *testing.T) {
	r := run(t, nil, "completion", "bash")
	r.wantCode(t, 0)
	contains(t, "completion", r.stdout, "tabwarden", "complete")
	// A shell with no script is an error, not cobra's help on stdout with
	// exit 0 that a dotfile would source as a script.
	for _, args := range [][]string{{"completion", "tcsh"}, {"completion"}} {
		r := run(t, nil, args...)
		r.wantCode(t, 2)
		if r.stdout != "" {
			t.Errorf("%v printed to stdout:\n%s", args, r.stdout)
		}
		contains(t, fmt.Sprint(args), r.stderr, "bash, zsh, fish, powershell", "Run 'tabwarden completion --help'")
	}
}

// The shells complete HOST and the flags that take one of a few words.
func TestCompletionOffersValues(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"connect", ""}, []string{"claude-code", "codex", "opencode", "gemini-cli", "cursor", "vscode"}},
		{[]string{"--consent", ""}, []string{"strict", "thread", "trusted"}},
		{[]string{"run", "--page-view", ""}, []string{"auto", "halfblock", "kitty", "sixel", "iterm2"}},
		{[]string{"--tools", ""}, []string{agent.Default.Name, agent.WebUse.Name}},
		{[]string{"run", "--provider", ""}, []string{"openai", "anthropic"}},
		{[]string{"run", "--images", ""}, []string{"on", "off"}},
	} {
		r := run(t, nil, append([]string{"__complete"}, tc.args...)...)
		r.wantCode(t, 0)
		got := strings.Fields(r.stdout)
		for _, w := range tc.want {
			if !slices.Contains(got, w) {
				t.Errorf("completing %q: %q missing from %q", tc.args, w, got)
			}
		}
	}
}

// tokens revoke completes the kept tokens' names (never their values, never
// file names).
func TestCompletionOffersTokenNames(t *testing.T) {
	state := filepath.Join(t.TempDir(), "state")
	if err := os.MkdirAll(filepath.Join(state, "tabwarden"), 0o700); err != nil {
		t.Fatal(err)
	}
	store := `{"tokens":[{"name":"codex","sha256":"` + strings.Repeat("ab", 32) + `","created":"2026-12-03T10:00:00Z"},` +
		`{"name":"opencode-2","sha256":"` + strings.Repeat("cd", 32) + `","created":"2026-12-03T11:00:00Z"}]}`
	if err := os.WriteFile(filepath.Join(state, "tabwarden", "tokens.json"), []byte(store), 0o600); err != nil {
		t.Fatal(err)
	}
	r := run(t, []string{"XDG_STATE_HOME=" + state}, "__complete", "tokens", "revoke", "")
	r.wantCode(t, 0)
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	want := []string{"codex", "opencode-2", ":4"} // 4: ShellCompDirectiveNoFileComp
	if !slices.Equal(lines, want) {
		t.Errorf("completing tokens revoke: %q, want %q", lines, want)
	}
	lacks(t, "completion", r.stdout, "abab")
	// A second word completes nothing, and no file names either.
	r = run(t, []string{"XDG_STATE_HOME=" + state}, "__complete", "tokens", "revoke", "codex", "")
	r.wantCode(t, 0)
	if got := strings.TrimSpace(r.stdout); got != ":4" {
		t.Errorf("completing after NAME: %q, want only :4", got)
	}
}

func TestCompletionHelpNamesBashCompletion(t *testing.T) {
	r := run(t, nil, "completion", "--help")
	r.wantCode(t, 0)
	contains(t, "completion --help", r.stdout, "bash-completion", "_get_comp_words_by_ref")
}

// Errors are one plain line for a person, not log records, and a usage
// error points at the --help of the command that was run.
func TestErrorsArePlainLines(t *testing.T) {
	for _, tc := range []struct {
		args       []string
		want, lack []string
	}{
		{[]string{"--mcp-listen", "192.0.2.1:80", "version"}, []string{"tabwarden: invalid --mcp-listen '192.0.2.1:80'"}, []string{"level=", "msg="}},
		{[]string{"run"}, []string{"tabwarden: run needs a task", "Run 'tabwarden run --help' for usage."}, []string{"level=", "accepts 1 arg", "Run 'tabwarden --help'"}},
		{[]string{"run", "open", "the", "page"}, []string{`quote it: tabwarden run "open the page"`, "Run 'tabwarden run --help'"}, nil},
		{[]string{"run", "--no-such", "task"}, []string{"unknown flag: --no-such", "Run 'tabwarden run --help'"}, nil},
		{[]string{"frobnicate"}, []string{`tabwarden: unknown command "frobnicate"`, "Run 'tabwarden --help'"}, nil},
		{[]string{"--consent", "lax", "version"}, []string{"tabwarden: invalid --consent 'lax'", "--help' for usage."}, nil},
		{[]string{"connect"}, []string{"tabwarden: connect takes one HOST", "Run 'tabwarden connect --help' for usage."}, nil},
		{[]string{"policy", "check"}, []string{"tabwarden: policy check needs at least one policy FILE", "Run 'tabwarden policy check --help' for usage."}, []string{"requires at least"}},
		// Every flag value the console cannot honour points at --help,
		// like --consent does.
		{[]string{"--review-delay", "10ms"}, []string{"tabwarden: invalid --review-delay 10ms", "Run 'tabwarden --help' for usage."}, nil},
		{[]string{"--grant-window", "1s"}, []string{"tabwarden: invalid --grant-window 1s", "Run 'tabwarden --help' for usage."}, nil},
		{[]string{"demo", "--review-timeout", "1s"}, []string{"tabwarden: invalid --review-timeout 1s", "Run 'tabwarden demo --help' for usage."}, nil},
		{[]string{"run", "task", "--model", "m", "--provider", "acme"}, []string{"tabwarden: invalid --provider 'acme'", "Run 'tabwarden run --help' for usage."}, nil},
		{[]string{"run", "task"}, []string{"tabwarden: run: no model: pass --model", "Run 'tabwarden run --help' for usage."}, nil},
		{[]string{"tokens", "revoke"}, []string{"tabwarden: tokens revoke takes one NAME", "Run 'tabwarden tokens revoke --help' for usage."}, nil},
		{[]string{"audit", "a", "b"}, []string{"tabwarden: audit reads one log FILE at a time", "Run 'tabwarden audit --help' for usage."}, []string{"arg(s)"}},
		{[]string{"connect", "claude-code", "--transport", "grpc"}, []string{"tabwarden: connect: unknown transport", "Run 'tabwarden connect --help' for usage."}, nil},
		{[]string{"--mcp-listen", "0.0.0.0:9999", "version"}, []string{"tabwarden: invalid --mcp-listen '0.0.0.0:9999': listen address"}, []string{"mcpserver:"}},
		{[]string{"run", "task", "--model", "m", "--setup", "local"}, []string{"--setup local:", "providers.json does not exist"}, []string{"(have: )"}},
	} {
		r := run(t, nil, tc.args...)
		r.wantCode(t, 2)
		contains(t, fmt.Sprint(tc.args), r.stderr, tc.want...)
		lacks(t, fmt.Sprint(tc.args), r.stderr, tc.lack...)
	}
}

func TestDoctorRunsEveryCheck(t *testing.T) {
	// The verdict depends on this machine; the report's shape does not.
	r := run(t, []string{"DISPLAY=" + os.Getenv("DISPLAY")}, "doctor")
	if r.code != 0 && r.code != 1 {
		t.Fatalf("doctor exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, name := range []string{"chromium", "display", "xauth", "profile lock"} {
		if !strings.Contains(r.stdout, "✓ "+name) && !strings.Contains(r.stdout, "✗ "+name) {
			t.Errorf("no %q check in:\n%s", name, r.stdout)
		}
	}
	if (r.code == 1) != strings.Contains(r.stdout, "✗") {
		t.Errorf("exit %d does not match the report:\n%s", r.code, r.stdout)
	}
}

// fakeChromium is an executable that answers --version like Chromium.
func fakeChromium(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "chromium")
	if err := os.WriteFile(p, []byte("#!/bin/sh\necho Chromium 999.0.0.0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestDoctorAllGood(t *testing.T) {
	r := run(t, nil, "doctor", "--chromium", fakeChromium(t), "--headless")
	r.wantCode(t, 0)
	contains(t, "doctor", r.stdout, "✓ chromium", "Chromium 999.0.0.0", "(from --chromium)",
		"✓ display", "--headless", "✓ xauth", "✓ profile lock", "All required checks passed.")
}

func TestDoctorChromiumFromEnv(t *testing.T) {
	r := run(t, []string{"TABWARDEN_CHROMIUM=" + fakeChromium(t)}, "doctor", "--headless")
	r.wantCode(t, 0)
	contains(t, "doctor", r.stdout, "(from TABWARDEN_CHROMIUM)")
}

func TestDoctorMissingChromium(t *testing.T) {
	r := run(t, nil, "doctor", "--chromium", "/nonexistent/chromium", "--headless")
	r.wantCode(t, 1)
	contains(t, "doctor", r.stdout, "✗ chromium", "/nonexistent/chromium", "fix:", "1 required check failed")
}

func TestDoctorNoDisplay(t *testing.T) {
	r := run(t, nil, "doctor", "--chromium", fakeChromium(t))
	r.wantCode(t, 1)
	contains(t, "doctor", r.stdout, "✗ display", "ssh -X", "xvfb-run -a tabwarden", "tabwarden --headless")
}

// A DISPLAY that is set but served by nobody (an ssh -X session that ended,
// an Xvfb that died) is a failure with the fixes, not a pass.
func TestDoctorDisplayNobodyServes(t *testing.T) {
	display := unusedDisplay(t)
	r := run(t, []string{"DISPLAY=" + display}, "doctor", "--chromium", fakeChromium(t))
	r.wantCode(t, 1)
	contains(t, "doctor", r.stdout, "✗ display", "no X server accepts a connection on DISPLAY="+display,
		"fix: xvfb-run -a tabwarden", "fix: tabwarden --headless", "fix: ssh -X")
}

// A display that answers (a real Xvfb) passes, and says it was opened.
func TestDoctorDisplayOpened(t *testing.T) {
	display := displaytest.Xvfb(t, "")
	r := run(t, []string{"DISPLAY=" + display}, "doctor", "--chromium", fakeChromium(t))
	contains(t, "doctor", r.stdout, "✓ display", "DISPLAY="+display+" (opened)")
}

// unusedDisplay is an X display number with no socket and no lock file.
func unusedDisplay(t *testing.T) string {
	t.Helper()
	for n := 90 + os.Getpid()%50; n < 400; n++ {
		_, errSock := os.Stat(fmt.Sprintf("/tmp/.X11-unix/X%d", n))
		_, errLock := os.Stat(fmt.Sprintf("/tmp/.X%d-lock", n))
		if errors.Is(errSock, os.ErrNotExist) && errors.Is(errLock, os.ErrNotExist) {
			return fmt.Sprintf(":%d", n)
		}
	}
	t.Fatal("no free X display number")
	return ""
}

func TestDoctorProfileLocked(t *testing.T) {
	profile := t.TempDir()
	host, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	// This test process is alive, so the lock is held.
	lock := fmt.Sprintf("%s-%d", host, os.Getpid())
	if err := os.Symlink(lock, filepath.Join(profile, "SingletonLock")); err != nil {
		t.Fatal(err)
	}
	r := run(t, nil, "doctor", "--chromium", fakeChromium(t), "--headless", "--profile", profile)
	r.wantCode(t, 1)
	contains(t, "doctor", r.stdout, "✗ profile lock", fmt.Sprintf("in use by process %d", os.Getpid()), "--profile DIR")
}

func writeAuditLog(t *testing.T, path string) {
	t.Helper()
	l, err := audit.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 11, 30, 9, 15, 0, 0, time.Local)
	for _, rec := range []audit.Record{
		{Time: at, Kind: audit.KindReviewShown, Conversation: "c1", Tab: "t1", Origin: "https://a.test", Gate: "navigation"},
		{Time: at.Add(2 * time.Second), Kind: audit.KindDecision, Conversation: "c1", Client: "default·a-very-long-client-name-that-a-terminal-would-cut·c1", Tab: "t1", Origin: "https://a.test", Gate: "navigation", Decision: "approved", By: "operator", WaitMS: 2000},
		{Time: at.Add(3 * time.Second), Kind: audit.KindToolCall, Conversation: "c2", Tool: "browser_open", Decision: "failed", Code: "invalid_url"},
	} {
		if err := l.Write(rec); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestAuditRendersFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	writeAuditLog(t, path)
	r := run(t, nil, "audit", path)
	r.wantCode(t, 0)
	contains(t, "table", r.stdout, "https://a.test", "approved", "navigation")
	// Piped, the table is whole: no column is cut or dropped.
	contains(t, "table", r.stdout, "default·a-very-long-client-name-that-a-terminal-would-cut·c1", "operator", "2.0s")
	if strings.Contains(r.stdout, "…") {
		t.Errorf("a piped table was cut:\n%s", r.stdout)
	}
	// --audit names the default file for the audit command too.
	r2 := run(t, nil, "--audit", path, "audit")
	r2.wantCode(t, 0)
	if r2.stdout != r.stdout {
		t.Errorf("--audit FILE and audit FILE differ:\n%s\n---\n%s", r2.stdout, r.stdout)
	}
}

func TestAuditJSONAndFilters(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	writeAuditLog(t, path)
	lines := func(out string) []audit.Record {
		t.Helper()
		var recs []audit.Record
		for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
			if l == "" {
				continue
			}
			var r audit.Record
			if err := json.Unmarshal([]byte(l), &r); err != nil {
				t.Fatalf("--json printed %q: %v", l, err)
			}
			recs = append(recs, r)
		}
		return recs
	}
	r := run(t, nil, "audit", "--json", path)
	r.wantCode(t, 0)
	if recs := lines(r.stdout); len(recs) != 3 {
		t.Fatalf("--json printed %d records, want 3:\n%s", len(recs), r.stdout)
	}
	// By a part of the client name: both of c1's records, also the one
	// written before the name was known.
	r = run(t, nil, "audit", "--json", "--conversation", "very-long-client", path)
	r.wantCode(t, 0)
	if recs := lines(r.stdout); len(recs) != 2 || recs[0].Conversation != "c1" || recs[1].Conversation != "c1" {
		t.Fatalf("--conversation by name: %+v", recs)
	}
	r = run(t, nil, "audit", "--conversation", "c2", path)
	r.wantCode(t, 0)
	contains(t, "table", r.stdout, "failed invalid_url")
	lacks(t, "table", r.stdout, "https://a.test")
	r = run(t, nil, "audit", "--json", "--since", "2026-11-30T09:15:02"+zone(t), path)
	r.wantCode(t, 0)
	if recs := lines(r.stdout); len(recs) != 2 {
		t.Fatalf("--since a time: %d records, want 2", len(recs))
	}
	r = run(t, nil, "audit", "--since", "yesterday", path)
	r.wantCode(t, 2)
	contains(t, "stderr", r.stderr, "invalid --since 'yesterday'")
}

// zone is the local zone offset in RFC 3339 form, as writeAuditLog's times.
func zone(t *testing.T) string {
	t.Helper()
	return time.Date(2026, 11, 30, 9, 15, 0, 0, time.Local).Format("Z07:00")
}

func TestAuditDefaultsToToday(t *testing.T) {
	state := filepath.Join(t.TempDir(), "state")
	env := []string{"XDG_STATE_HOME=" + state}
	r := run(t, env, "audit")
	r.wantCode(t, 1)
	today := "audit-" + time.Now().Format("2006-01-02") + ".jsonl"
	contains(t, "stderr", r.stderr, filepath.Join(state, "tabwarden", today))

	writeAuditLog(t, filepath.Join(state, "tabwarden", today))
	r = run(t, env, "audit")
	r.wantCode(t, 0)
	contains(t, "table", r.stdout, "approved")
}

func TestPolicyCheckGrantKeys(t *testing.T) {
	r := run(t, nil, "policy", "check", policyFile("grants-team.yaml"), policyFile("valid.json"))
	r.wantCode(t, 0)
	contains(t, "policy", r.stdout, "Scoped grants (s): only click, read, scroll", "Scoped grant window: at most 10 min")
	r = run(t, nil, "policy", "check", policyFile("grants-team.yaml"), policyFile("grants-off.json"))
	r.wantCode(t, 0)
	contains(t, "policy", r.stdout, "Scoped grants (s): off")
	r = run(t, nil, "policy", "check", policyFile("bad-grants.yaml"))
	r.wantCode(t, 2)
	contains(t, "stderr", r.stderr,
		`bad-grants.yaml: execution.maxGrantMinutes "0": Use a whole number of minutes from 1 to 1440; to turn scoped grants off, set grantable: [].`,
		`bad-grants.yaml: execution.grantable[1] "upload": Use read, scroll, click, select, key, fill, site_tool or site_tool:NAME.`)
}

func TestGrantWindowFlag(t *testing.T) {
	for _, v := range []string{"30s", "25h"} {
		r := run(t, nil, "--grant-window", v, "version")
		r.wantCode(t, 2)
		contains(t, "stderr "+v, r.stderr, "invalid --grant-window", "use 1m to 24h")
	}
	run(t, nil, "--grant-window", "5m", "version").wantCode(t, 0)
}
