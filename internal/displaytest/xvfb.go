// Package displaytest gives a test an X display of its own: an Xvfb that
// picks its display number itself and dies with the test. It imports
// nothing of tabwarden, so the tui's and the CLI's tests share it. Only
// tests import it; the binary never links it.
package displaytest

import (
	"bufio"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// Need skips the test when a program it drives (xterm, Xvfb, xprop…) is
// not installed, or fails it under CI (CI=true), which installs them
// (scripts/deps.sh).
func Need(t testing.TB, programs ...string) {
	t.Helper()
	for _, bin := range programs {
		if _, err := exec.LookPath(bin); err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("%s is not installed; CI installs it (scripts/deps.sh)", bin)
			}
			t.Skipf("%s is not installed (make deps installs it)", bin)
		}
	}
}

// DefaultScreen is the screen Xvfb gets when a test names none.
const DefaultScreen = "640x480x24"

// Xvfb runs an Xvfb with screen 0 of geometry screen ("" for
// DefaultScreen) and the extra arguments, on a display it picks itself
// (-displayfd, so the test never races its start-up), and returns
// ":number". The server is killed, by its pid, when the test ends. Without
// Xvfb the test is skipped, or fails under CI (CI=true), where it is
// installed.
func Xvfb(t testing.TB, screen string, args ...string) string {
	t.Helper()
	Need(t, "Xvfb")
	if screen == "" {
		screen = DefaultScreen
	}
	ready, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer ready.Close()
	args = append([]string{"-displayfd", "3", "-nolisten", "tcp", "-screen", "0", screen}, args...)
	srv := exec.CommandContext(t.Context(), "Xvfb", args...)
	srv.ExtraFiles = []*os.File{w}
	if err := srv.Start(); err != nil {
		_ = w.Close()
		t.Fatal(err)
	}
	_ = w.Close()
	t.Cleanup(func() { _ = srv.Process.Kill(); _ = srv.Wait() })
	num := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(ready).ReadString('\n')
		num <- strings.TrimSpace(line)
	}()
	select {
	case n := <-num:
		if n == "" {
			t.Fatal("Xvfb ended without reporting its display")
		}
		return ":" + n
	case <-time.After(60 * time.Second):
		t.Fatal("Xvfb did not report its display")
		return ""
	}
}
