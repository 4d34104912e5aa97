package browser

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/tabwarden/tabwarden/browser/cdpedge"
	"github.com/tabwarden/tabwarden/browser/wall"
	"github.com/tabwarden/tabwarden/consent/errcode"
	"github.com/ysmood/leakless"
)

// EnvChromium names the environment variable that points at Chromium.
const EnvChromium = "TABWARDEN_CHROMIUM"

// chromiumNames are looked up on PATH, in order, when neither
// Options.Chromium nor $TABWARDEN_CHROMIUM names a binary.
var chromiumNames = []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"}

// baseFlags are design.md §3's launch flags. WebMCP gives native site tools;
// the rest keep Chromium from talking to anything the operator did not ask
// for (background fetches, component updates, sync) and from showing a
// first-run dialog the operator must click away.
var baseFlags = []string{
	"--enable-features=WebMCP",
	// Without the back/forward cache a history navigation always issues
	// a main-frame request, which the hook judges; a page restored from
	// the cache would come back without consent (design.md §4: grants die
	// with take-over, and going back must ask again).
	"--disable-features=BackForwardCache",
	"--no-first-run",
	"--no-default-browser-check",
	"--disable-background-networking",
	"--disable-component-update",
	"--disable-sync",
	// A keyring prompt in a headed session would stall the launch.
	"--password-store=basic",
}

// LaunchFlags returns a copy of baseFlags, so a harness that starts a bare
// Chromium to prove a case live uses the very list Launch does.
func LaunchFlags() []string { return slices.Clone(baseFlags) }

// FindChromium returns the Chromium binary to run: explicit (when not
// empty), else $TABWARDEN_CHROMIUM, else the first of chromium,
// chromium-browser, google-chrome, google-chrome-stable on PATH. It never
// downloads one.
func FindChromium(explicit string) (string, error) {
	pick := explicit
	from := "--chromium"
	if pick == "" {
		pick, from = os.Getenv(EnvChromium), EnvChromium
	}
	if pick != "" {
		p, err := exec.LookPath(pick)
		if err != nil {
			return "", unavailable("Chromium from %s (%s) is not an executable: %v", from, pick, err)
		}
		return p, nil
	}
	for _, name := range chromiumNames {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	return "", unavailable("no Chromium found: install chromium, or pass --chromium PATH or set %s (tabwarden never downloads a browser)", EnvChromium)
}

// DefaultProfileDir is $XDG_DATA_HOME/tabwarden/profile (XDG_DATA_HOME
// defaulting to ~/.local/share).
func DefaultProfileDir() (string, error) {
	base := os.Getenv("XDG_DATA_HOME")
	if base == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("profile dir: %w", err)
		}
		base = filepath.Join(home, ".local", "share")
	}
	return filepath.Join(base, "tabwarden", "profile"), nil
}

// CheckDisplay fails when a headed Chromium is asked for and no display is
// reachable, naming the three ways out, instead of letting Chromium exit
// with a cryptic X11 message.
func CheckDisplay(headless bool) error {
	if headless || runtime.GOOS == "darwin" || runtime.GOOS == "windows" {
		return nil
	}
	if os.Getenv("DISPLAY") != "" || os.Getenv("WAYLAND_DISPLAY") != "" {
		return nil
	}
	return unavailable("a headed Chromium needs a display and neither DISPLAY nor WAYLAND_DISPLAY is set: " +
		"connect with `ssh -X`, run under `xvfb-run -a tabwarden`, or pass --headless")
}

// CheckProfileLock reads Chromium's <profile>/SingletonLock (a symlink to
// "host-pid") and fails when that Chromium is still running, because a
// second Chromium on the same profile would hand our URL to the first one
// and leave us waiting for a DevTools endpoint that never comes.
func CheckProfileLock(profile string) error {
	target, err := os.Readlink(filepath.Join(profile, "SingletonLock"))
	if err != nil {
		return nil // no lock: free
	}
	i := strings.LastIndexByte(target, '-')
	if i < 0 {
		return nil
	}
	host, pidText := target[:i], target[i+1:]
	pid, err := strconv.Atoi(pidText)
	if err != nil || pid <= 0 {
		return nil
	}
	if me, _ := os.Hostname(); host != me {
		return unavailable("profile %s is in use by a Chromium on host %s (pid %d); close it or pass --profile DIR", profile, host, pid)
	}
	if !processAlive(pid) {
		return nil // stale lock; Chromium replaces it
	}
	return unavailable("profile %s is in use by another Chromium (pid %d); close it or pass --profile DIR", profile, pid)
}

func processAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

func unavailable(format string, args ...any) *errcode.Error {
	return errcode.Errorf(errcode.BrowserUnavailable, errcode.NextNone, format, args...)
}

// process is a Chromium we launched: leakless is the direct child, Chromium
// its child and the leader of its own process group.
type process struct {
	cmd     *exec.Cmd
	pid     int           // Chromium's pid, also its process group id
	exited  chan struct{} // closed once leakless (and so Chromium) has been reaped
	drained chan struct{} // closed once Chromium's output pipe has no writer left
	// wall is the proxy every connection of this Chromium goes through
	// (see startWall); it outlives Chromium by nothing: stop closes it
	// once the group is dead.
	wall *wall.Wall
}

var devtoolsLine = regexp.MustCompile(`DevTools listening on (ws://\S+)`)

// start runs Chromium under leakless and returns its DevTools websocket URL.
func start(ctx context.Context, bin string, args []string) (*process, string, error) {
	if !leakless.Support() {
		return nil, "", unavailable("this platform has no leakless guard; launch Chromium yourself and pass --browser-url")
	}
	ll := leakless.New()
	cmd := ll.Command(bin, args...)
	// Leakless gets its own group so a terminal ^C aimed at the console is
	// not what ends Chromium; the console's Close (or leakless, when the
	// console dies) does.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, "", unavailable("launch %s: %v", bin, err)
	}
	cmd.Stdout = pw
	cmd.Stderr = pw
	if err := cmd.Start(); err != nil {
		pw.Close()
		pr.Close()
		return nil, "", unavailable("launch %s: %v", bin, err)
	}
	pw.Close() // the children hold their own copies

	p := &process{cmd: cmd, exited: make(chan struct{}), drained: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		close(p.exited)
	}()

	urls := make(chan string, 1)
	tail := make(chan string, 1)
	go func() {
		// Drain until every writer is gone (Chromium's group has exited) so
		// Chromium never blocks on a full pipe.
		defer close(p.drained)
		defer pr.Close()
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		var last []string
		found := false
		for sc.Scan() {
			line := sc.Text()
			if !found {
				if m := devtoolsLine.FindStringSubmatch(line); m != nil {
					urls <- m[1]
					found = true
					continue
				}
				last = append(last, line)
				if len(last) > 8 {
					last = last[1:]
				}
			}
		}
		_, _ = io.Copy(io.Discard, pr)
		if !found {
			tail <- strings.Join(last, "\n")
		}
	}()

	pidc := make(chan int, 1)
	go func() {
		select {
		case pid := <-ll.Pid():
			pidc <- pid
		case <-p.exited:
		}
	}()

	fail := func(msg string) (*process, string, error) {
		if p.pid == 0 {
			// Leakless may have started Chromium (in a group of its own)
			// and not yet said its pid: killing leakless now would orphan
			// it, since a SIGKILLed leakless cleans nothing up. Wait for
			// the pid, or for leakless to end, then kill both groups.
			select {
			case p.pid = <-pidc:
			case <-p.exited:
			case <-time.After(cdpedge.Close):
			}
		}
		p.stop(0)
		return nil, "", unavailable("%s", msg)
	}
	select {
	case p.pid = <-pidc:
		if p.pid == 0 {
			return fail("Chromium did not start: " + ll.Err())
		}
	case <-ctx.Done():
		return fail(fmt.Sprintf("Chromium did not start in time: %v", ctx.Err()))
	}
	select {
	case u := <-urls:
		return p, u, nil
	case out := <-tail:
		return fail("Chromium exited before opening DevTools: " + strings.TrimSpace(out))
	case <-ctx.Done():
		return fail(fmt.Sprintf("Chromium opened no DevTools endpoint in time: %v", ctx.Err()))
	}
}

// kill ends Chromium's whole process group and leakless.
func (p *process) kill() {
	if p.pid > 0 {
		_ = syscall.Kill(-p.pid, syscall.SIGKILL)
	}
	if p.cmd.Process != nil {
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	}
}

// stop waits up to grace for Chromium to exit on its own (after
// Browser.close, so the profile is flushed), then kills the group, and
// returns once leakless has been reaped.
func (p *process) stop(grace time.Duration) {
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-p.exited:
	case <-t.C:
	}
	// Even after a clean exit, helpers of the group may linger.
	p.kill()
	<-p.exited
	// A helper that left the group could hold the pipe open; do not let it
	// hold Close hostage.
	select {
	case <-p.drained:
	case <-time.After(2 * time.Second):
	}
	if p.wall != nil {
		_ = p.wall.Close()
	}
}

// mergeFeatureFlags folds every --enable-features= and --disable-features=
// into one flag each (at the first one's position): Chromium honours only
// the last occurrence, so an operator's --disable-features in ExtraFlags
// would otherwise silently re-enable the back/forward cache.
func mergeFeatureFlags(args []string) []string {
	out := args[:0:0]
	at := map[string]int{}
	for _, a := range args {
		name, val, ok := strings.Cut(a, "=")
		if !ok || (name != "--enable-features" && name != "--disable-features") {
			out = append(out, a)
			continue
		}
		if i, seen := at[name]; seen {
			if val != "" {
				out[i] += "," + val
			}
			continue
		}
		at[name] = len(out)
		out = append(out, a)
	}
	return out
}

// noPreloading is Chromium's "Preload pages" setting
// (net.network_prediction_options) at 2, "never": with it, speculation
// rules neither prefetch nor prerender (PrefetchNotEligiblePreloadingDisabled,
// PreloadingDisabled). Chromium 156 has no launch flag that does this, and
// those loads bypass CDP request interception entirely, so the setting is
// the only off switch (docs/decisions.md, speculative loads).
const noPreloading = 2

// disablePreloading sets the setting in <profile>/Default/Preferences
// before every launch, keeping everything else in the file: an operator
// who turned it back on in a headed session gets it off again on the next
// launch. A Preferences file that is not JSON fails the launch rather than
// be replaced, since Chromium would discard the operator's settings with
// it.
func disablePreloading(profile string) error {
	dir := filepath.Join(profile, "Default")
	path := filepath.Join(dir, "Preferences")
	prefs := map[string]any{}
	data, err := os.ReadFile(path)
	switch {
	case err == nil:
		// UseNumber: every other number goes back exactly as it came.
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber()
		if err := dec.Decode(&prefs); err != nil || prefs == nil {
			return unavailable("profile preferences %s are not JSON (%v); move the file away or pass --profile DIR", path, err)
		}
	case errors.Is(err, os.ErrNotExist):
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return unavailable("profile %s: %v", dir, err)
		}
	default:
		return unavailable("profile preferences %s: %v", path, err)
	}
	net, _ := prefs["net"].(map[string]any)
	if net == nil {
		net = map[string]any{}
		prefs["net"] = net
	}
	if v, ok := net["network_prediction_options"].(json.Number); ok && v.String() == strconv.Itoa(noPreloading) {
		return nil
	}
	net["network_prediction_options"] = noPreloading
	out, err := json.Marshal(prefs)
	if err != nil {
		return unavailable("profile preferences %s: %v", path, err)
	}
	tmp := path + ".tabwarden"
	if err := os.WriteFile(tmp, out, 0o600); err != nil {
		return unavailable("profile preferences %s: %v", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		_ = os.Remove(tmp)
		return unavailable("profile preferences %s: %v", path, err)
	}
	return nil
}
