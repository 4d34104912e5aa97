package browser

import (
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tabwarden/tabwarden/agent/demo/fixture/fixturetest"
)

func TestAttachByHTTPEndpoint(t *testing.T) {
	fixturetest.NeedChromium(t)
	bin, err := FindChromium("")
	if err != nil {
		t.Fatal(err)
	}
	args := append([]string{}, baseFlags...)
	args = append(args, "--headless=new", "--remote-debugging-port=0",
		"--user-data-dir="+filepath.Join(t.TempDir(), "p"), "about:blank")
	if os.Geteuid() == 0 {
		args = append(args, "--no-sandbox")
	}
	proc, ws, err := start(testCtx(t), bin, args)
	if err != nil {
		t.Fatal(err)
	}
	defer proc.stop(0)
	u, _ := url.Parse(ws)

	a := fixturetest.Start(t)
	e := launch(t, func(o *Options) { o.BrowserURL = "http://" + u.Host })
	if e.b.PID() != 0 {
		t.Fatal("an attached browser claims a pid of its own")
	}
	// Launched without --enable-automation, Chromium keeps its command
	// line to itself: the console says what it cannot check.
	if gaps := e.b.Gaps(); len(gaps) == 0 || !strings.Contains(gaps[0], "cannot be read") {
		t.Errorf("gaps of a bare Chromium: %q", gaps)
	}
	e.gate.mu.Lock()
	noted := slices.ContainsFunc(e.gate.notes, func(n string) bool { return strings.HasPrefix(n, "attached browser: ") })
	e.gate.mu.Unlock()
	if !noted {
		t.Error("the gaps are not in the activity log")
	}
	tab := e.newTab(t)
	done := e.navigate(testCtx(t), tab, a.URL+"/session")
	e.gate.expectAsk(t, a.URL).reply <- deny()
	if err := <-done; err == nil {
		t.Fatal("denied navigation succeeded")
	}
	if a.Total() != 0 {
		t.Fatalf("%d requests reached the site through the attached browser", a.Total())
	}
	if err := e.b.Close(); err != nil {
		t.Fatal(err)
	}
	// Close detaches: the operator's Chromium keeps running.
	if !processAlive(proc.pid) {
		t.Fatal("Close killed an attached Chromium")
	}
	select {
	case <-proc.exited:
		t.Fatal("attached Chromium exited on Close")
	default:
	}
}
