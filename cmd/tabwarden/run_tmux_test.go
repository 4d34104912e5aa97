package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tabwarden/tabwarden/agent/demo/fixture/fixturetest"
)

// `tabwarden run` as an operator starts it: the real binary in a real
// terminal (tmux), headless Chromium, against a loopback server that
// implements only the documented chat-completions API (JSON answers here;
// streaming is the default, so --stream=false is the flag's own test).
func TestTmuxRunAgainstChatCompletions(t *testing.T) {
	if _, err := exec.LookPath("tmux"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("tmux is not installed; CI installs it (scripts/deps.sh)")
		}
		t.Skip("tmux is not installed (make deps installs it)")
	}
	fixturetest.NeedChromium(t)
	replay := startReplay(t, "openai", loadTurns(t, "testdata/builtin/tabs.json"), nil)
	home := t.TempDir()
	name := fmt.Sprintf("twrun%d", os.Getpid())
	env := []string{
		"HOME=" + home, "XDG_STATE_HOME=" + filepath.Join(home, "state"), "XDG_DATA_HOME=" + filepath.Join(home, "data"),
		"XDG_RUNTIME_DIR=" + filepath.Join(home, "run"), "XDG_CONFIG_HOME=" + filepath.Join(home, "config"), "TERM=xterm-256color",
	}
	_ = os.MkdirAll(filepath.Join(home, "run"), 0o700)
	cmdline := fmt.Sprintf("env %s %s run --headless --stream=false --provider openai --base-url %s --model local-text-model 'List my tabs.'; echo TWEXIT=$?; sleep 60",
		strings.Join(env, " "), binPath, replay.URL())
	if out, err := exec.CommandContext(t.Context(), "tmux", "-L", name, "new-session", "-d", "-s", name, "-x", "160", "-y", "50", cmdline).CombinedOutput(); err != nil {
		t.Fatalf("tmux: %v %s", err, out)
	}
	t.Cleanup(func() { _ = exec.CommandContext(context.Background(), "tmux", "-L", name, "kill-server").Run() })
	screen := func() string {
		out, _ := exec.CommandContext(t.Context(), "tmux", "-L", name, "capture-pane", "-p", "-t", name).Output()
		return string(out)
	}
	deadline := time.Now().Add(90 * time.Second)
	var s string
	for time.Now().Before(deadline) {
		if s = screen(); strings.Contains(s, "finished") {
			break
		}
		time.Sleep(300 * time.Millisecond)
	}
	if !strings.Contains(s, "stopped after 2 steps: finished") {
		t.Fatalf("the run did not finish on screen:\n%s", s)
	}
	for _, want := range []string{"built-in agent", "model says (untrusted): I have no tabs yet"} {
		if !strings.Contains(s, want) {
			t.Errorf("the screen lacks %q:\n%s", want, s)
		}
	}
	for _, p := range replay.problems() {
		t.Errorf("provider server: %s", p)
	}
	if n := len(replay.requests()); n != 2 {
		t.Errorf("the provider saw %d requests, want 2", n)
	}
	// Quit as the operator does, and wait for the console (and its
	// Chromium) to be gone before the temporary profile is removed.
	_ = exec.CommandContext(t.Context(), "tmux", "-L", name, "send-keys", "-t", name, "q").Run()
	time.Sleep(500 * time.Millisecond)
	_ = exec.CommandContext(t.Context(), "tmux", "-L", name, "send-keys", "-t", name, "y").Run()
	deadline = time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if s = screen(); strings.Contains(s, "TWEXIT=") {
			break
		}
		time.Sleep(300 * time.Millisecond)
	}
	if !strings.Contains(s, "TWEXIT=0") {
		t.Errorf("the console did not quit with 0:\n%s", s)
	}
}
