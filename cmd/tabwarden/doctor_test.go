package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// machine describes a fake machine for the doctor's checks.
type machine struct {
	env      map[string]string
	onPath   map[string]string
	goos     string
	root     bool
	hostname string
	alive    map[int]bool
	consoles map[int]int // a process's tabwarden console
	noServer bool        // the display named in env does not answer
}

func (m machine) doctorEnv() doctorEnv {
	return doctorEnv{
		getenv: func(k string) string { return m.env[k] },
		lookPath: func(name string) (string, error) {
			if p, ok := m.onPath[name]; ok {
				return p, nil
			}
			return "", exec.ErrNotFound
		},
		goos:     m.goos,
		isRoot:   m.root,
		hostname: func() (string, error) { return m.hostname, nil },
		pidAlive: func(pid int) bool { return m.alive[pid] },
		consoleOf: func(pid int) (int, bool) {
			c, ok := m.consoles[pid]
			return c, ok
		},
		openDisplay: func() error {
			if m.noServer {
				return errors.New("no X server accepts a connection on DISPLAY=:0")
			}
			return nil
		},
	}
}

func TestFindChromiumOrder(t *testing.T) {
	m := machine{
		env:    map[string]string{"TABWARDEN_CHROMIUM": "mychrome"},
		onPath: map[string]string{"mychrome": "/opt/mychrome", "google-chrome": "/usr/bin/google-chrome", "chromium": "/usr/bin/chromium", "flagchrome": "/x/flagchrome"},
	}
	for _, tc := range []struct {
		flag, env, want, source string
	}{
		{"flagchrome", "mychrome", "/x/flagchrome", "--chromium"},
		{"", "mychrome", "/opt/mychrome", "TABWARDEN_CHROMIUM"},
		{"", "", "/usr/bin/chromium", "PATH"}, // chromium before google-chrome
	} {
		m.env["TABWARDEN_CHROMIUM"] = tc.env
		p, src, err := findChromium(&options{chromium: tc.flag}, m.doctorEnv())
		if err != nil || p != tc.want || src != tc.source {
			t.Errorf("flag %q env %q: got %q from %s (%v), want %q from %s", tc.flag, tc.env, p, src, err, tc.want, tc.source)
		}
	}
	// An explicit choice that is missing is an error, never a silent fallback.
	if _, _, err := findChromium(&options{chromium: "gone"}, m.doctorEnv()); err == nil {
		t.Error("missing --chromium fell back to PATH")
	}
}

func TestChromiumInstallFix(t *testing.T) {
	for _, tc := range []struct {
		m    machine
		want string
	}{
		{machine{goos: "linux", onPath: map[string]string{"apt-get": "/usr/bin/apt-get"}}, "sudo apt-get install chromium"},
		{machine{goos: "linux", root: true, onPath: map[string]string{"apt-get": "/usr/bin/apt-get"}}, "apt-get install chromium"},
		{machine{goos: "darwin"}, "brew install --cask chromium"},
	} {
		c := checkChromium(context.Background(), &options{}, tc.m.doctorEnv())
		if c.ok || !c.required || len(c.fixes) == 0 || c.fixes[0] != tc.want {
			t.Errorf("%s root=%v: %+v, want first fix %q", tc.m.goos, tc.m.root, c, tc.want)
		}
	}
	// Attaching to a running browser needs no local Chromium.
	c := checkChromium(context.Background(), &options{browserURL: "http://127.0.0.1:9222"}, machine{goos: "linux"}.doctorEnv())
	if !c.ok {
		t.Errorf("--browser-url without chromium: %+v", c)
	}
}

func TestDisplayCheck(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    options
		m    machine
		ok   bool
	}{
		{"x11", options{}, machine{goos: "linux", env: map[string]string{"DISPLAY": ":0"}}, true},
		{"wayland", options{}, machine{goos: "linux", env: map[string]string{"WAYLAND_DISPLAY": "wayland-0"}}, true},
		{"none", options{}, machine{goos: "linux"}, false},
		{"x11 nobody serves", options{}, machine{goos: "linux", env: map[string]string{"DISPLAY": ":0"}, noServer: true}, false},
		{"none but headless", options{headless: true}, machine{goos: "linux"}, true},
		{"macOS", options{}, machine{goos: "darwin"}, true},
	} {
		c := checkDisplay(&tc.o, tc.m.doctorEnv())
		if c.ok != tc.ok {
			t.Errorf("%s: ok=%v, want %v (%s)", tc.name, c.ok, tc.ok, c.detail)
		}
		if !c.ok && !strings.Contains(strings.Join(c.fixes, "\n"), "xvfb-run -a tabwarden") {
			t.Errorf("%s: fixes lack xvfb-run: %v", tc.name, c.fixes)
		}
	}
}

func TestRemoteDisplay(t *testing.T) {
	for display, want := range map[string]bool{
		"":                false,
		":0":              false,
		":1.0":            false,
		"unix:0":          false,
		"/tmp/launch/org": false,
		"localhost:10.0":  true, // ssh -X
		"remote.host:0":   true,
		"[::1]:10":        true,
	} {
		if got := remoteDisplay(display); got != want {
			t.Errorf("remoteDisplay(%q) = %v, want %v", display, got, want)
		}
	}
}

func TestXauthCheck(t *testing.T) {
	fwd := map[string]string{"DISPLAY": "localhost:10.0"}
	apt := map[string]string{"apt-get": "/usr/bin/apt-get"}
	c := checkXauth(&options{}, machine{goos: "linux", env: fwd, onPath: apt}.doctorEnv())
	if c.ok || !strings.Contains(strings.Join(c.fixes, "\n"), "sudo apt-get install xauth") {
		t.Errorf("forwarded display without xauth: %+v", c)
	}
	c = checkXauth(&options{}, machine{goos: "linux", env: fwd, onPath: map[string]string{"xauth": "/usr/bin/xauth"}}.doctorEnv())
	if !c.ok {
		t.Errorf("forwarded display with xauth: %+v", c)
	}
	c = checkXauth(&options{}, machine{goos: "linux", env: map[string]string{"DISPLAY": ":0"}}.doctorEnv())
	if !c.ok {
		t.Errorf("local display needs no xauth: %+v", c)
	}
}

func TestParseSingletonLock(t *testing.T) {
	for target, want := range map[string]struct {
		host string
		pid  int
		ok   bool
	}{
		"myhost-1234":       {"myhost", 1234, true},
		"my-dashed-host-42": {"my-dashed-host", 42, true},
		"nohyphen":          {ok: false},
		"host-":             {ok: false},
		"-12":               {ok: false},
		"host-abc":          {ok: false},
		"host-0":            {ok: false},
	} {
		h, p, ok := parseSingletonLock(target)
		if ok != want.ok || (ok && (h != want.host || p != want.pid)) {
			t.Errorf("parseSingletonLock(%q) = %q %d %v, want %+v", target, h, p, ok, want)
		}
	}
}

func TestProfileLockCheck(t *testing.T) {
	dir := t.TempDir()
	o := &options{profile: dir}
	m := machine{goos: "linux", hostname: "here", alive: map[int]bool{100: true, 300: true}, consoles: map[int]int{300: 299}}
	if c := checkProfileLock(o, m.doctorEnv()); !c.ok {
		t.Fatalf("no lock: %+v", c)
	}
	for _, tc := range []struct {
		target string
		ok     bool
		detail string
	}{
		{"here-100", false, "in use by process 100"},
		// doctor beside a running console: its own Chromium's lock.
		{"here-300", true, "in use by the running tabwarden console (pid 299)"},
		{"here-200", true, "stale lock"},
		{"elsewhere-100", false, "on host elsewhere"},
		{"garbage", false, "not host-pid"},
	} {
		lock := dir + "/SingletonLock"
		if err := symlink(tc.target, lock); err != nil {
			t.Fatal(err)
		}
		c := checkProfileLock(o, m.doctorEnv())
		if c.ok != tc.ok || !strings.Contains(c.detail, tc.detail) {
			t.Errorf("lock -> %s: %+v, want ok=%v detail ~ %q", tc.target, c, tc.ok, tc.detail)
		}
	}
}

// consoleOf finds the console above a process it started, and none above
// a process no console started.
func TestConsoleOf(t *testing.T) {
	if _, ok := consoleOf(os.Getpid()); ok {
		t.Error("the test binary is taken for a console")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "tabwarden")
	// /proc/PID/exe names the resolved binary: a copy, not a link.
	src, err := os.ReadFile("/bin/sh")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, src, 0o755); err != nil {
		t.Fatal(err)
	}
	console := exec.CommandContext(t.Context(), bin, "-c", "sleep 30; true")
	if err := console.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = console.Process.Kill(); _ = console.Wait() })
	if got, ok := consoleOf(console.Process.Pid); !ok || got != console.Process.Pid {
		t.Errorf("consoleOf(a tabwarden process) = %d, %v", got, ok)
	}
	// Its child (as Chromium is the console's) belongs to it too.
	var child int
	for deadline := time.Now().Add(10 * time.Second); child == 0 && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		kids, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", console.Process.Pid, console.Process.Pid))
		if f := strings.Fields(string(kids)); len(f) > 0 {
			child, _ = strconv.Atoi(f[0])
		}
	}
	if got, ok := consoleOf(child); child == 0 || !ok || got != console.Process.Pid {
		t.Errorf("consoleOf(the console's child %d) = %d, %v", child, got, ok)
	}
}

func TestPidAlive(t *testing.T) {
	if !pidAlive(os.Getpid()) {
		t.Error("our own process is not alive")
	}
	// Above Linux's pid_max (2^22), so no process can have it.
	if pidAlive(1 << 30) {
		t.Error("an impossible pid is alive")
	}
}

func symlink(target, link string) error {
	if err := os.Remove(link); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return os.Symlink(target, link)
}

// The console refuses a headed launch on a display nobody serves, naming the
// reason and the fixes, before Chromium can print its own stderr.
func TestNeedDisplay(t *testing.T) {
	dead := map[string]string{"DISPLAY": unusedDisplay(t), "HOME": t.TempDir()}
	getenv := func(k string) string { return dead[k] }
	err := needDisplay(context.Background(), &options{}, getenv, "linux")
	if err == nil {
		t.Fatal("a headed launch on a display nobody serves was allowed")
	}
	for _, want := range []string{"no X server accepts a connection on DISPLAY=" + dead["DISPLAY"], "xvfb-run -a tabwarden", "tabwarden --headless", "ssh -X"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "  ") {
		t.Errorf("error %q keeps the doctor's column spacing in a sentence", err)
	}
	for _, o := range []options{{headless: true}, {browserURL: "http://127.0.0.1:9222"}} {
		if err := needDisplay(context.Background(), &o, getenv, "linux"); err != nil {
			t.Errorf("%+v needs no display: %v", o, err)
		}
	}
}

// TestWallCheck: the doctor says what a launched browser gets below the
// page and, never silently, what an attached one does not (issue 20).
func TestWallCheck(t *testing.T) {
	var out strings.Builder
	launched := checkWall(&options{})
	attached := checkWall(&options{browserURL: "http://127.0.0.1:9222"})
	failed := printChecks(&out, []check{launched, attached})
	text := out.String()
	if failed != 0 {
		t.Errorf("an attached browser's missing wall failed the doctor:\n%s", text)
	}
	if !launched.ok || !strings.Contains(text, "✓ network wall") || !strings.Contains(launched.detail, "no UDP") {
		t.Errorf("launched: %+v", launched)
	}
	for _, want := range []string{"✗ network wall", "off: an attached browser", "Background Fetch", "FedCM", "service worker", "WebRTC", "fix: tabwarden   (without --browser-url"} {
		if !strings.Contains(text, want) {
			t.Errorf("doctor output lacks %q:\n%s", want, text)
		}
	}
}
