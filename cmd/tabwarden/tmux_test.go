package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestTmuxKeyAheadGuard drives the real console in a real terminal
// (scripts/tmux-review-test.sh): an `a` pressed as the review appears is
// ignored and says so on screen; an `a` after --review-delay approves, and
// the outcome is read off the activity log on screen.
func TestTmuxKeyAheadGuard(t *testing.T) {
	if _, err := exec.LookPath("tmux"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("tmux is not installed; CI installs it (scripts/deps.sh), so this is a broken CI setup")
		}
		t.Skip("tmux is not installed (make deps installs it)")
	}
	repo := filepath.Join("..", "..")
	cmd := exec.CommandContext(t.Context(), "bash", filepath.Join(repo, "scripts", "tmux-review-test.sh"),
		binPath, filepath.Join(repo, "testdata", "scripts", "keyahead.jsonl"))
	out, err := cmd.CombinedOutput()
	t.Logf("%s", out)
	if err != nil {
		t.Fatalf("tmux review test: %v", err)
	}
}
