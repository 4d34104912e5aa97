package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/tabwarden/tabwarden/browser"
)

// chromiumNames are the executables searched on PATH, in order (design.md §3:
// system Chromium/Chrome only; nothing is ever downloaded).
var chromiumNames = []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"}

// check is one line of the doctor's report. Fixes are exact commands or
// flags the operator can type.
type check struct {
	name     string
	ok       bool
	required bool
	detail   string
	fixes    []string
}

func newDoctorCmd(o *options, s streams) *cobra.Command {
	return &cobra.Command{
		Use:   "doctor",
		Short: "Check Chromium, the display for headed mode and the profile lock, and print the fix for what is missing",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			checks := runDoctor(cmd.Context(), o, doctorEnv{
				getenv:      os.Getenv,
				lookPath:    exec.LookPath,
				goos:        runtime.GOOS,
				isRoot:      os.Geteuid() == 0,
				hostname:    os.Hostname,
				pidAlive:    pidAlive,
				consoleOf:   consoleOf,
				openDisplay: func() error { return realOpenDisplay(cmd.Context()) },
			})
			failed := printChecks(s.out, checks)
			if failed > 0 {
				return &exitError{code: exitFailure, reported: true,
					err: fmt.Errorf("doctor: %s failed", plural(failed, "required check"))}
			}
			return nil
		},
	}
}

// doctorEnv is the part of the machine the checks read, injectable so the
// unit tests can describe any machine.
type doctorEnv struct {
	getenv   func(string) string
	lookPath func(string) (string, error)
	goos     string
	isRoot   bool
	hostname func() (string, error)
	pidAlive func(int) bool
	// consoleOf finds the tabwarden console a process belongs to (itself
	// or an ancestor); nil: never known.
	consoleOf func(pid int) (console int, ok bool)
	// openDisplay really connects to the display (X11 handshake or Wayland
	// socket); nil means a headed Chromium could open a window.
	openDisplay func() error
}

func runDoctor(ctx context.Context, o *options, env doctorEnv) []check {
	checks := []check{
		checkChromium(ctx, o, env),
		checkDisplay(o, env),
		checkXauth(o, env),
		checkProfileLock(o, env),
		checkWall(o),
	}
	if o.browserURL != "" {
		checks = append(checks, checkAttached(ctx, o))
	}
	if c, ok := checkSSH(o); ok {
		checks = append(checks, c)
	}
	return checks
}

func printChecks(w io.Writer, checks []check) (failed int) {
	for _, c := range checks {
		mark := "✓"
		if !c.ok {
			mark = "✗"
			if c.required {
				failed++
			}
		}
		fmt.Fprintf(w, "%s %-13s %s\n", mark, c.name, c.detail)
		if !c.ok {
			for _, f := range c.fixes {
				fmt.Fprintf(w, "    fix: %s\n", f)
			}
		}
	}
	if failed == 0 {
		fmt.Fprintln(w, "All required checks passed.")
	} else {
		fmt.Fprintf(w, "%s failed.\n", plural(failed, "required check"))
	}
	return failed
}

// findChromium resolves the executable the console would launch and says
// where it came from.
func findChromium(o *options, env doctorEnv) (path, source string, err error) {
	if o.chromium != "" {
		p, err := env.lookPath(o.chromium)
		return p, "--chromium", err
	}
	if v := env.getenv("TABWARDEN_CHROMIUM"); v != "" {
		p, err := env.lookPath(v)
		return p, "TABWARDEN_CHROMIUM", err
	}
	for _, name := range chromiumNames {
		if p, err := env.lookPath(name); err == nil {
			return p, "PATH", nil
		}
	}
	return "", "PATH", fmt.Errorf("none of %s on PATH", strings.Join(chromiumNames, ", "))
}

// checkAttached opens one short session on --browser-url and names what
// the console cannot guarantee in that browser (design.md §14). An
// unreachable endpoint fails; gaps are shown as not ok but do not fail
// the doctor, since the console runs (and says them) all the same.
func checkAttached(ctx context.Context, o *options) check {
	c := check{name: "attached", required: true}
	gaps, err := browser.CheckAttached(ctx, o.browserURL, o.browserToken)
	if err != nil {
		c.detail = err.Error()
		c.fixes = []string{"check --browser-url and the fleet's token (--browser-token or $" + browser.EnvBrowserToken + ")"}
		return c
	}
	c.required = false
	c.ok = len(gaps) == 0
	c.detail = browser.ShownURL(o.browserURL) + " reached"
	if !c.ok {
		c.detail += "; it cannot guarantee:\n      - " + strings.Join(gaps, "\n      - ")
		c.fixes = []string{"launch that browser with tabwarden's flags (README: browserless and Selenium Grid)"}
	}
	return c
}

func checkChromium(ctx context.Context, o *options, env doctorEnv) check {
	c := check{name: "chromium", required: o.browserURL == ""}
	path, source, err := findChromium(o, env)
	if err == nil {
		c.ok = true
		c.detail = fmt.Sprintf("%s (from %s)", path, source)
		if v := chromiumVersion(ctx, path); v != "" {
			c.detail += " — " + v
		}
		return c
	}
	if o.browserURL != "" {
		c.ok = true
		c.detail = "not needed: attaching to " + browser.ShownURL(o.browserURL)
		return c
	}
	switch source {
	case "--chromium":
		c.detail = fmt.Sprintf("--chromium %s is not an executable: %v", o.chromium, err)
		c.fixes = []string{"tabwarden --chromium /path/to/chromium"}
	case "TABWARDEN_CHROMIUM":
		c.detail = fmt.Sprintf("TABWARDEN_CHROMIUM=%s is not an executable: %v", env.getenv("TABWARDEN_CHROMIUM"), err)
		c.fixes = []string{"export TABWARDEN_CHROMIUM=/path/to/chromium"}
	default:
		c.detail = "no Chromium or Chrome found: " + err.Error()
		c.fixes = append(installFixes(env, "chromium"), "tabwarden --chromium /path/to/chrome")
	}
	return c
}

// chromiumVersion is informational only; a browser that cannot print its
// version within a few seconds is still reported as found.
func chromiumVersion(ctx context.Context, path string) string {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, path, "--version").Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

// installFixes names the package-manager command for pkg on this machine.
func installFixes(env doctorEnv, pkg string) []string {
	switch {
	case env.goos == "darwin":
		if pkg == "chromium" {
			return []string{"brew install --cask chromium"}
		}
		return nil
	case func() bool { _, err := env.lookPath("apt-get"); return err == nil }():
		sudo := "sudo "
		if env.isRoot {
			sudo = ""
		}
		return []string{sudo + "apt-get install " + pkg}
	default:
		return []string{"install the " + pkg + " package with your distribution's package manager"}
	}
}

func checkDisplay(o *options, env doctorEnv) check {
	c := check{name: "display", required: true, ok: true}
	switch {
	case o.browserURL != "":
		c.detail = "not needed: the attached browser has its own display"
		return c
	case o.headless:
		c.detail = "not needed (--headless)"
		return c
	case env.goos == "darwin":
		c.detail = "macOS window server"
		return c
	case env.getenv("WAYLAND_DISPLAY") != "":
		c.detail = "WAYLAND_DISPLAY=" + env.getenv("WAYLAND_DISPLAY")
	case env.getenv("DISPLAY") != "":
		c.detail = "DISPLAY=" + env.getenv("DISPLAY")
	default:
		c.ok = false
		c.detail = "headed Chromium needs a display: neither $DISPLAY nor $WAYLAND_DISPLAY is set"
		c.fixes = noDisplayFixes()
		return c
	}
	if err := env.openDisplay(); err != nil {
		c.ok = false
		c.detail = err.Error() + "; headed Chromium cannot open its window"
		c.fixes = noDisplayFixes()
		return c
	}
	c.detail += " (opened)"
	return c
}

// remoteDisplay reports whether an X DISPLAY names a TCP display
// ("localhost:10.0" as set by ssh -X), which needs xauth for its cookie.
func remoteDisplay(display string) bool {
	i := strings.LastIndex(display, ":")
	if i <= 0 {
		return false
	}
	host := display[:i]
	return host != "unix" && !strings.HasPrefix(host, "/")
}

func checkXauth(o *options, env doctorEnv) check {
	c := check{name: "xauth", required: true, ok: true}
	display := env.getenv("DISPLAY")
	if o.headless || o.browserURL != "" || env.goos == "darwin" || !remoteDisplay(display) {
		c.detail = "not needed (no forwarded X display)"
		return c
	}
	if p, err := env.lookPath("xauth"); err == nil {
		c.detail = fmt.Sprintf("%s (forwarded display %s)", p, display)
		return c
	}
	c.ok = false
	c.detail = fmt.Sprintf("DISPLAY=%s is forwarded (ssh -X) but xauth is not on PATH, so Chromium cannot open it", display)
	c.fixes = append(installFixes(env, "xauth"), "ssh -X user@host   (reconnect after installing)")
	return c
}

func checkProfileLock(o *options, env doctorEnv) check {
	c := check{name: "profile lock", required: true}
	if o.browserURL != "" {
		c.ok = true
		c.detail = "not needed: the attached browser owns its profile"
		return c
	}
	dir := o.profileDir()
	lock := filepath.Join(dir, "SingletonLock")
	target, err := os.Readlink(lock)
	if errors.Is(err, fs.ErrNotExist) {
		c.ok = true
		c.detail = "free: " + dir
		return c
	}
	if err != nil {
		c.detail = fmt.Sprintf("cannot read %s: %v", lock, err)
		c.fixes = []string{"tabwarden --profile DIR   (use another profile directory)"}
		return c
	}
	host, pid, ok := parseSingletonLock(target)
	if !ok {
		c.detail = fmt.Sprintf("%s points at %q, not host-pid", lock, target)
		c.fixes = []string{"tabwarden --profile DIR   (use another profile directory)"}
		return c
	}
	me, _ := env.hostname()
	console, ours := 0, false
	if host == me && env.consoleOf != nil {
		console, ours = env.consoleOf(pid)
	}
	switch {
	case host == me && !env.pidAlive(pid):
		c.ok = true
		c.detail = fmt.Sprintf("free: stale lock of process %d (Chromium takes it over): %s", pid, dir)
	case ours:
		// doctor run beside a console on this profile: the lock is that
		// console's Chromium, which is how it should be.
		c.ok = true
		c.detail = fmt.Sprintf("in use by the running tabwarden console (pid %d): %s; another console beside it needs --profile DIR", console, dir)
	case host == me:
		c.detail = fmt.Sprintf("in use by process %d on this host (another tabwarden or Chromium): %s", pid, dir)
		c.fixes = []string{
			"quit the other console or Chromium using this profile",
			"tabwarden --profile DIR   (use another profile directory)",
		}
	default:
		c.detail = fmt.Sprintf("locked by process %d on host %s: %s", pid, host, dir)
		c.fixes = []string{
			fmt.Sprintf("rm %s   (only if %s no longer runs Chromium on this profile)", shellQuote(lock), host),
			"tabwarden --profile DIR   (use another profile directory)",
		}
	}
	return c
}

// parseSingletonLock splits Chromium's lock target "hostname-pid"; the
// hostname may itself contain dashes.
func parseSingletonLock(target string) (host string, pid int, ok bool) {
	i := strings.LastIndex(target, "-")
	if i <= 0 {
		return "", 0, false
	}
	pid, err := strconv.Atoi(target[i+1:])
	if err != nil || pid <= 0 {
		return "", 0, false
	}
	return target[:i], pid, true
}

// pidAlive: signal 0 probes existence; EPERM means it exists under another user.
// consoleOf walks pid's ancestors (a launched Chromium runs under the
// console, through rod's leakless guard) looking for a tabwarden binary.
func consoleOf(pid int) (int, bool) {
	for range 4 {
		if pid <= 1 {
			return 0, false
		}
		if exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid)); err == nil && filepath.Base(strings.TrimSuffix(exe, " (deleted)")) == "tabwarden" {
			return pid, true
		}
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			return 0, false
		}
		// "pid (comm) state ppid …": comm may hold spaces and parentheses.
		i := strings.LastIndexByte(string(stat), ')')
		f := strings.Fields(string(stat)[i+1:])
		if i < 0 || len(f) < 2 {
			return 0, false
		}
		if pid, err = strconv.Atoi(f[1]); err != nil {
			return 0, false
		}
	}
	return 0, false
}

func pidAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

func shellQuote(s string) string {
	if s != "" && !strings.ContainsAny(s, " \t\n'\"\\$`!*?[]{}()<>|&;#~") {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
