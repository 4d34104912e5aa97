// Package fleettest runs a real browserless (scripts/browserless, pinned,
// on the system Chromium) for attach-mode tests. Test-only: nothing in the
// binary imports it.
package fleettest

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tabwarden/tabwarden/internal/logtest"
	"github.com/tabwarden/tabwarden/internal/proctest"
)

// EnvRequired, when set (CI sets it), makes a missing install a failure
// instead of a skip.
const EnvRequired = "TABWARDEN_BROWSERLESS_REQUIRED"

// Config is one browserless instance.
type Config struct {
	Token      string
	Concurrent int // CONCURRENT; zero: 2
	Queued     int // QUEUED; zero: 2
}

// Browserless is a running instance, stopped at the test's cleanup.
type Browserless struct {
	// HTTP is http://127.0.0.1:PORT, WS the same as ws://.
	HTTP, WS string
	Token    string
	cmd      *exec.Cmd
	logs     *logtest.Buffer
}

// Dir is scripts/browserless of this checkout.
func Dir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "scripts", "browserless")
}

// Start runs browserless and waits until it answers /json/version. It
// skips when scripts/browserless/install.sh has not run, unless
// EnvRequired is set.
func Start(t testing.TB, cfg Config) *Browserless {
	t.Helper()
	dir, _ := filepath.Abs(Dir())
	index := filepath.Join(dir, "node_modules", "@browserless.io", "browserless", "build", "index.js")
	if _, err := os.Stat(index); err != nil {
		if os.Getenv(EnvRequired) != "" {
			t.Fatalf("browserless is not installed (%v): run scripts/browserless/install.sh", err)
		}
		t.Skipf("browserless is not installed: run scripts/browserless/install.sh (%s unset)", EnvRequired)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("node: %v", err)
	}
	port := freePort(t)
	// Not t.TempDir: Chromium may still be writing its profile while its
	// group dies, and a failed RemoveAll there fails the test.
	data, err := os.MkdirTemp("", "tabwarden-browserless-")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"data", "downloads"} {
		if err := os.Mkdir(filepath.Join(data, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	b := &Browserless{
		HTTP:  fmt.Sprintf("http://127.0.0.1:%d", port),
		WS:    fmt.Sprintf("ws://127.0.0.1:%d", port),
		Token: cfg.Token,
		logs:  &logtest.Buffer{},
	}
	cmd := exec.CommandContext(context.Background(), node, index)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(),
		"HOST=127.0.0.1",
		"PORT="+strconv.Itoa(port),
		"TOKEN="+cfg.Token,
		"CONCURRENT="+strconv.Itoa(orTwo(cfg.Concurrent)),
		"QUEUED="+strconv.Itoa(orTwo(cfg.Queued)),
		"TIMEOUT=300000",
		"ROUTES="+filepath.Join(dir, "routes"),
		"PLAYWRIGHT_BROWSERS_PATH="+filepath.Join(dir, "browsers"),
		"DATA_DIR="+filepath.Join(data, "data"),
		"DOWNLOAD_DIR="+filepath.Join(data, "downloads"),
		"METRICS_JSON_PATH="+filepath.Join(data, "metrics.json"),
		"DEBUG=browserless*,-**:trace,-**:verbose",
	)
	cmd.Stdout, cmd.Stderr = b.logs, b.logs
	// Its own process group: cleanup ends browserless and every Chromium
	// it started, and nothing else.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start browserless: %v", err)
	}
	b.cmd = cmd
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(5 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-exited
		}
		// Chromium children that outlived their parent's group signal.
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		// browserless starts Chromium detached, in a process group of its
		// own, so the group signal misses it: end every process whose
		// command line names this instance's data directory, which no
		// one else's does.
		killNaming(data)
		for range 10 {
			if os.RemoveAll(data) == nil {
				break
			}
			time.Sleep(200 * time.Millisecond)
		}
	})
	deadline := time.Now().Add(90 * time.Second)
	for {
		if b.ready() {
			return b
		}
		select {
		case <-exited:
			t.Fatalf("browserless exited before it was ready:\n%s", b.Logs())
		case <-time.After(200 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("browserless not ready in 90s:\n%s", b.Logs())
		}
	}
}

func orTwo(n int) int {
	if n <= 0 {
		return 2
	}
	return n
}

func (b *Browserless) ready() bool {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, b.HTTP+"/json/version", nil)
	if b.Token != "" {
		req.Header.Set("Authorization", "Bearer "+b.Token)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	res.Body.Close()
	return res.StatusCode == http.StatusOK
}

// Logs is what browserless printed so far.
func (b *Browserless) Logs() string { return b.logs.String() }

// Pressure is browserless's own count of running and queued sessions.
func (b *Browserless) Pressure(t testing.TB) (running, queued int) {
	t.Helper()
	req, _ := http.NewRequestWithContext(context.Background(), http.MethodGet, b.HTTP+"/pressure", nil)
	if b.Token != "" {
		req.Header.Set("Authorization", "Bearer "+b.Token)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var v struct {
		Pressure struct {
			Running int `json:"running"`
			Queued  int `json:"queued"`
		} `json:"pressure"`
	}
	if err := json.NewDecoder(res.Body).Decode(&v); err != nil {
		t.Fatalf("/pressure: %v", err)
	}
	return v.Pressure.Running, v.Pressure.Queued
}

// LaunchQuery is the `launch` query parameter that gives browserless's
// Chromium these extra flags.
func LaunchQuery(args []string) string {
	raw, _ := json.Marshal(map[string]any{"args": args})
	return "launch=" + url.QueryEscape(string(raw))
}

// ChromiumPIDs are the browser processes (not renderers or helpers) this
// browserless started, found through the process tree under its pid.
func (b *Browserless) ChromiumPIDs() []int {
	procs := proctest.All()
	parent := map[int]int{}
	for _, p := range procs {
		parent[p.PID] = p.PPID
	}
	under := func(pid int) bool {
		for p := parent[pid]; p > 1; p = parent[p] {
			if p == b.cmd.Process.Pid {
				return true
			}
		}
		return false
	}
	var out []int
	for _, p := range procs {
		if !under(p.PID) || len(p.Args) == 0 || !strings.Contains(p.Args[0], "chrom") {
			continue
		}
		browser := false
		for _, a := range p.Args {
			if strings.HasPrefix(a, "--type=") {
				browser = false
				break
			}
			if strings.HasPrefix(a, "--remote-debugging-port=") {
				browser = true
			}
		}
		if browser {
			out = append(out, p.PID)
		}
	}
	return out
}

func freePort(t testing.TB) int {
	t.Helper()
	ln, err := (&net.ListenConfig{}).Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// killNaming kills, by pid, every process whose command line contains
// marker (a path unique to one browserless instance).
func killNaming(marker string) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && strings.Contains(string(cmdline), marker) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}
