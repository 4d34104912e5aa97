package mcpserver

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tabwarden/tabwarden/agent/demo/fixture"
	"github.com/tabwarden/tabwarden/consent"
	"github.com/tabwarden/tabwarden/consent/audit"
	"github.com/tabwarden/tabwarden/consent/audit/audittest"
	"github.com/tabwarden/tabwarden/internal/stacktest"
)

// callerEnv turns the test binary into a separate MCP client process (see
// TestMain): it connects with the protocol in TW_CALLER_VERSION, calls
// browser_open on TW_CALLER_OPEN, prints "calling" and waits for the
// answer, which it prints. The tests kill it with SIGKILL while its review
// is on screen: a client that dies without a word, which a cancelled
// context in this process could not stand for.
const callerEnv = "TW_CALLER_PROCESS"

func TestMain(m *testing.M) {
	if os.Getenv(callerEnv) != "" {
		os.Exit(runCallerProcess())
	}
	os.Exit(m.Run())
}

func runCallerProcess() int {
	cs, err := stacktest.Dial(os.Getenv("TW_CALLER_URL"), os.Getenv("TW_CALLER_TOKEN"), os.Getenv("TW_CALLER_VERSION"), "doomed-client")
	if err != nil {
		fmt.Fprintln(os.Stderr, "caller process:", err)
		return 1
	}
	fmt.Println("calling")
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "browser_open", Arguments: map[string]any{"url": os.Getenv("TW_CALLER_OPEN")}})
	if err != nil {
		fmt.Println("error:", err)
		return 1
	}
	fmt.Println("answer:", res.StructuredContent)
	return 0
}

// startCaller starts the caller process against w and returns once it has
// sent its call.
func startCaller(t *testing.T, w *chromiumWorld, version, open string) *exec.Cmd {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), callerEnv+"=1", "TW_CALLER_URL="+w.url, "TW_CALLER_TOKEN="+w.srv.DefaultToken().Secret,
		"TW_CALLER_VERSION="+version, "TW_CALLER_OPEN="+open)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// Ends only the process this test started, by its pid.
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || strings.TrimSpace(line) != "calling" {
		t.Fatalf("caller process said %q: %v", line, err)
	}
	return cmd
}

// newAuditedWorld is newChromiumWorld with the engine's audit in memory.
func newAuditedWorld(t *testing.T) (*chromiumWorld, *audittest.Memory) {
	t.Helper()
	w := newChromiumWorldFor(t, 120*time.Second)
	return w, w.stk.Audit
}

// bringOnScreen plays the operator selecting the tab of the site's
// navigation review, and returns the review once it is on screen.
func (w *chromiumWorld) bringOnScreen(t *testing.T) consent.Review {
	t.Helper()
	changes, stop := w.eng.Changes()
	defer stop()
	for {
		st := w.eng.Snapshot()
		if f := st.Focused; f != nil && f.Kind == consent.KindNavigation && f.Origin == w.site.URL {
			return *f
		}
		for _, r := range st.Queue {
			if r.Origin == w.site.URL && (st.Selection.Conversation != r.Conversation || st.Selection.Tab != r.Tab) {
				w.eng.Select(r.Conversation, r.Tab)
			}
		}
		select {
		case <-changes:
		case <-w.ctx.Done():
			t.Fatalf("no navigation review for %s came on screen; queue %+v", w.site.URL, st.Queue)
		}
	}
}

// TestKilledCallerWithdrawsItsReview is issue 10's acceptance for callers
// that are gone: an MCP client process killed with SIGKILL while its
// browser_open review is on screen, stateful and sessionless. The review
// leaves the screen (withdrawn, audited with the reason), the operator's a
// afterwards reaches nothing, and the site never sees the page. The
// control run shows the same call, approved, does reach the site.
func TestKilledCallerWithdrawsItsReview(t *testing.T) {
	w, mem := newAuditedWorld(t)
	const page = "/e2e/act.html"

	t.Run("control: approved, the page loads", func(t *testing.T) {
		startCaller(t, w, statefulVersion, w.site.URL+page+"?from=control")
		r := w.bringOnScreen(t)
		time.Sleep(time.Until(r.ShownAt.Add(e2eDelay + 5*time.Millisecond)))
		if err := w.eng.Decide(r.ID, true); err != nil {
			t.Fatal(err)
		}
		if _, err := w.site.WaitFor(w.ctx, func(q fixture.Request) bool {
			return q.Path == page && strings.Contains(q.Query, "from=control")
		}); err != nil {
			t.Fatalf("the approved open never reached the site: %v", err)
		}
	})

	for _, c := range []struct{ version, why string }{
		{statefulVersion, "the HTTP connection that carried the call closed"},
		{sessionlessVersion, "its HTTP request ended"},
	} {
		t.Run(c.version, func(t *testing.T) {
			tag := "from=killed-" + c.version
			cmd := startCaller(t, w, c.version, w.site.URL+page+"?"+tag)
			r := w.bringOnScreen(t)

			killed := time.Now()
			if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			_ = cmd.Wait()
			stacktest.WaitState(t, w.eng, "the killed client's review off the screen", func(st consent.State) bool {
				for _, q := range st.Queue {
					if q.ID == r.ID {
						return false
					}
				}
				return true
			})
			took := time.Since(killed)
			t.Logf("review %s left the screen %s after SIGKILL", r.ID, took.Round(time.Millisecond))

			ctx, cancel := context.WithTimeout(w.ctx, 15*time.Second)
			defer cancel()
			rec, err := mem.WaitFor(ctx, func(x audit.Record) bool { return x.Kind == audit.KindDecision && x.Review == r.ID })
			if err != nil {
				t.Fatal(err)
			}
			if rec.Decision != "canceled" || !strings.HasPrefix(rec.Note, "withdrawn: ") || !strings.Contains(rec.Note, c.why) {
				t.Fatalf("decision %+v, want canceled, noted withdrawn because %s", rec, c.why)
			}

			// The operator presses a a moment later: nothing to approve.
			if err := w.eng.Decide(r.ID, true); err != consent.ErrNoSuchReview {
				t.Fatalf("a after the client died: %v, want ErrNoSuchReview", err)
			}
			if f := w.eng.Snapshot().Focused; f != nil {
				t.Fatalf("a review is on screen after the client died: %+v", *f)
			}
			// The witness: the page the dead client asked for never loads.
			// The control shows an approved one arrives well within this.
			select {
			case <-time.After(2 * time.Second):
			case <-w.ctx.Done():
			}
			if n := countPath(w.site, page, tag); n != 0 {
				t.Fatalf("the killed client's page reached the site %d times", n)
			}
		})
	}
}
