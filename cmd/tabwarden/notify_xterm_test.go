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

	"github.com/tabwarden/tabwarden/internal/displaytest"
)

// TestXtermBellAndTitle runs the real console in xterm under Xvfb: xterm
// shows no desktop notifications, so a new review rings the bell, which
// xterm (bellIsUrgent) turns into the X urgency hint a window manager
// flashes, and the window's title counts the pending review.
func TestXtermBellAndTitle(t *testing.T) {
	t.Run("desktop", func(t *testing.T) { xtermBell(t, "desktop") })
	// The witness can tell: with --notify off the title still counts the
	// review, and no bell makes the window urgent.
	t.Run("off", func(t *testing.T) { xtermBell(t, "off") })
}

func xtermBell(t *testing.T, notify string) {
	displaytest.Need(t, "xterm", "Xvfb", "xprop")
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	display := displaytest.Xvfb(t, "1024x768x24")

	script := filepath.Join(dir, "review.jsonl")
	if err := os.WriteFile(script, []byte(`{"after":"1500ms","conversation":"c1","name":"agent-1","tab":"t1","gate":"navigation","origin":"https://a.test"}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	winFile := filepath.Join(dir, "window")
	inner := fmt.Sprintf("echo $WINDOWID > %s; exec env XDG_STATE_HOME=%s XDG_DATA_HOME=%s %s --script %s --audit %s --notify %s",
		winFile, filepath.Join(dir, "state"), filepath.Join(dir, "data"), binPath, script, filepath.Join(dir, "audit.jsonl"), notify)
	xt := exec.CommandContext(ctx, "xterm", "-display", display, "-geometry", "120x40+0+0",
		"-xrm", "XTerm*bellIsUrgent: true", "-e", "sh", "-c", inner)
	xt.Env = append(os.Environ(), "DISPLAY="+display, "TMUX=", "TERM_PROGRAM=", "KITTY_WINDOW_ID=", "VTE_VERSION=")
	var xlog strings.Builder
	xt.Stderr = &xlog
	if err := xt.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = xt.Process.Kill(); _ = xt.Wait() })

	xprop := func(win, prop string) string {
		out, _ := exec.CommandContext(ctx, "xprop", "-display", display, "-id", win, prop).CombinedOutput()
		return string(out)
	}
	deadline := time.Now().Add(30 * time.Second)
	var win, name, hints string
	for {
		b, _ := os.ReadFile(winFile)
		win = strings.TrimSpace(string(b))
		if win != "" {
			name, hints = xprop(win, "WM_NAME"), xprop(win, "WM_HINTS")
			if strings.Contains(name, "tabwarden (1 pending)") && (notify == "off" || strings.Contains(hints, "urgency hint bit is set")) {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("window %q: WM_NAME %q, WM_HINTS %q; xterm says %s", win, name, hints, xlog.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	if notify == "off" {
		time.Sleep(time.Second) // a bell sent with the title would have landed
		if hints = xprop(win, "WM_HINTS"); strings.Contains(hints, "urgency") {
			t.Fatalf("--notify off made the window urgent: %s", hints)
		}
	}
	t.Logf("xterm --notify %s: %s%s", notify, strings.TrimSpace(name), strings.TrimSpace(hints))
}
