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
)

// TestTmuxBellAndTitle runs the real console in a tmux pane: a new review
// rings the bell (tmux's alert-bell hook, with bell-action any, witnesses
// it) and the pane's title counts the pending review. Under tmux the
// console sends no desktop sequence (tmux would drop or garble it).
func TestTmuxBellAndTitle(t *testing.T) {
	needTmux(t)
	dir := t.TempDir()
	script := filepath.Join(dir, "review.jsonl")
	if err := os.WriteFile(script, []byte(`{"after":"1500ms","conversation":"c1","name":"agent-1","tab":"t1","gate":"navigation","origin":"https://a.test"}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	bells := filepath.Join(dir, "bells")
	sock := filepath.Join(dir, "tmux.sock")
	tm := func(args ...string) string {
		t.Helper()
		out, err := exec.CommandContext(context.Background(), "tmux", append([]string{"-S", sock, "-f", "/dev/null"}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("tmux %v: %v: %s", args, err, out)
		}
		return string(out)
	}
	t.Cleanup(func() { _ = exec.CommandContext(context.Background(), "tmux", "-S", sock, "kill-server").Run() })
	cmd := fmt.Sprintf("env XDG_STATE_HOME=%s XDG_DATA_HOME=%s %s --script %s --audit %s",
		filepath.Join(dir, "state"), filepath.Join(dir, "data"), binPath, script, filepath.Join(dir, "audit.jsonl"))
	tm("new-session", "-d", "-s", "bell", "-x", "120", "-y", "40", cmd, ";",
		"set-option", "-g", "bell-action", "any", ";",
		"set-hook", "-g", "alert-bell", "run-shell 'echo bell >> "+bells+"'")

	deadline := time.Now().Add(20 * time.Second)
	var title string
	for {
		b, _ := os.ReadFile(bells)
		title = strings.TrimSpace(tm("display-message", "-p", "-t", "bell", "#{pane_title}"))
		if strings.Contains(string(b), "bell") && strings.HasPrefix(title, "tabwarden (1 pending)") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("bell hook %q, pane title %q; screen:\n%s", b, title, tm("capture-pane", "-p", "-t", "bell"))
		}
		time.Sleep(100 * time.Millisecond)
	}
	screen := tm("capture-pane", "-p", "-t", "bell")
	if !strings.Contains(screen, "Allow origin in this tab") {
		t.Fatalf("no review on screen:\n%s", screen)
	}
	if !strings.Contains(title, "https://a.test") {
		t.Fatalf("title %q lacks the review's origin", title)
	}
	t.Logf("tmux rang the bell; pane title %q", title)
}
