package browser

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/tabwarden/tabwarden/agent/demo/fixture/fixturetest"
	"github.com/tabwarden/tabwarden/consent/errcode"
	"github.com/tabwarden/tabwarden/internal/proctest"
)

// groupMembers lists processes whose process group is pgid; with live
// set, zombies are left out.
func groupMembers(pgid int, live bool) []int {
	var out []int
	for _, p := range proctest.All() {
		if live && p.State == "Z" {
			continue
		}
		if p.PGID == pgid || p.PID == pgid {
			out = append(out, p.PID)
		}
	}
	return out
}

func TestCloseLeavesNoProcessOrGoroutine(t *testing.T) {
	needChromium(t)
	a := fixturetest.Start(t)
	before := runtime.NumGoroutine()

	e := launch(t, nil)
	b, profile := e.b, e.b.opts.ProfileDir
	pid := b.PID()
	if pid == 0 || len(groupMembers(pid, true)) == 0 {
		t.Fatalf("no Chromium process group for pid %d", pid)
	}
	// The header line says a headless console has no window.
	if got := b.String(); !strings.Contains(got, "headless (no window)") {
		t.Errorf("String() = %q for a headless launch", got)
	}
	tab := e.newTab(t)
	e.open(t, tab, a.URL, a.URL+"/signin.html")
	// A review left pending at Close must not keep anything alive.
	// A review left pending at Close must not keep anything alive: a
	// cross-origin-free reload of a covered origin would pass, so hold a
	// fresh tab's first navigation instead.
	tab2 := e.newTab(t)
	held := e.navigate(testCtx(t), tab2, a.URL+"/session")
	e.gate.expectAsk(t, a.URL)
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	// SIGKILL went to the whole group before Close returned; a member may
	// take a moment to finish dying.
	waitFor(t, "Chromium processes gone", func() bool { return len(groupMembers(pid, true)) == 0 })
	// Helpers orphaned by the kill are zombies of init until it reaps them;
	// none may stay.
	waitFor(t, "Chromium zombies reaped", func() bool { return len(groupMembers(pid, false)) == 0 })
	if _, err := os.Stat(profile); err != nil {
		t.Fatalf("Close touched the profile: %v", err)
	}
	if err := <-held; err == nil {
		t.Fatal("a navigation held at its review succeeded across Close")
	}
	if _, err := b.NewTab(testCtx(t), conv, false); errcode.Of(err) != errcode.BrowserUnavailable {
		t.Fatalf("op after Close: %v, want browser_unavailable", err)
	}
	// The fixture's connection goroutines end as their sockets close; give
	// the runtime that moment.
	if !poll(func() bool { return runtime.NumGoroutine() <= before }) {
		buf := make([]byte, 1<<20)
		t.Fatalf("goroutines: %d before, %d after Close\n%s", before, runtime.NumGoroutine(), buf[:runtime.Stack(buf, true)])
	}
}

// poll is for state nothing signals (the process table, the goroutine
// count): it re-checks cond for up to 10 s.
func poll(cond func() bool) bool {
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
	return true
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	if !poll(cond) {
		t.Fatalf("timed out: %s", what)
	}
}

func TestSecondConsoleOnSameProfileFailsClearly(t *testing.T) {
	profile := filepath.Join(t.TempDir(), "profile")
	e := launch(t, func(o *Options) { o.ProfileDir = profile })
	_, err := Launch(testCtx(t), Options{Headless: true, ProfileDir: profile, Gate: newFakeGate()})
	wantCode(t, err, errcode.BrowserUnavailable)
	want := fmt.Sprintf("profile %s is in use by another Chromium (pid %d); close it or pass --profile DIR", profile, e.b.PID())
	if !strings.Contains(err.Error(), want) {
		t.Fatalf("error %q\nwant it to contain %q", err, want)
	}
}

func TestProfileLockRules(t *testing.T) {
	dir := t.TempDir()
	host, _ := os.Hostname()
	lock := filepath.Join(dir, "SingletonLock")
	if err := CheckProfileLock(dir); err != nil {
		t.Fatalf("no lock: %v", err)
	}
	if err := os.Symlink(fmt.Sprintf("%s-%d", host, os.Getpid()), lock); err != nil {
		t.Fatal(err)
	}
	wantCode(t, CheckProfileLock(dir), errcode.BrowserUnavailable)

	// A lock left by a Chromium that is gone is Chromium's to replace.
	os.Remove(lock)
	if err := os.Symlink(fmt.Sprintf("%s-%d", host, deadPID(t)), lock); err != nil {
		t.Fatal(err)
	}
	if err := CheckProfileLock(dir); err != nil {
		t.Fatalf("stale lock: %v", err)
	}
}

// deadPID returns a pid that belonged to a process which has exited.
func deadPID(t *testing.T) int {
	p, err := os.StartProcess("/bin/true", []string{"true"}, &os.ProcAttr{})
	if err != nil {
		t.Skipf("cannot start /bin/true: %v", err)
	}
	if _, err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	return p.Pid
}

func TestHeadedWithoutDisplayNamesTheWaysOut(t *testing.T) {
	needChromium(t)
	t.Setenv("DISPLAY", "")
	t.Setenv("WAYLAND_DISPLAY", "")
	profile := filepath.Join(t.TempDir(), "profile")
	_, err := Launch(testCtx(t), Options{ProfileDir: profile, Gate: newFakeGate()})
	wantCode(t, err, errcode.BrowserUnavailable)
	for _, s := range []string{"ssh -X", "xvfb-run -a tabwarden", "--headless"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q does not mention %q", err, s)
		}
	}
	if _, err := os.Stat(profile); !os.IsNotExist(err) {
		t.Errorf("a failed launch created the profile: %v", err)
	}
}

func TestNoChromiumIsNeverDownloaded(t *testing.T) {
	t.Setenv(EnvChromium, "")
	t.Setenv("PATH", t.TempDir())
	_, err := Launch(context.Background(), Options{Headless: true, ProfileDir: t.TempDir(), Gate: newFakeGate()})
	wantCode(t, err, errcode.BrowserUnavailable)
	if !strings.Contains(err.Error(), "--chromium") || !strings.Contains(err.Error(), EnvChromium) {
		t.Fatalf("error %q does not say how to point at Chromium", err)
	}
	_, err = Launch(context.Background(), Options{Chromium: "/nonexistent/chromium", Headless: true, ProfileDir: t.TempDir(), Gate: newFakeGate()})
	wantCode(t, err, errcode.BrowserUnavailable)
}
