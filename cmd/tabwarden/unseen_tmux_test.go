package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/tabwarden/tabwarden/internal/stacktest"
)

// No review waits unseen (design.md §4), on the real console in tmux with two
// agents over HTTP, one after another as hosts are: the first opens a
// page (its tab stays in front); the second's review comes on screen by
// itself — only `a` is pressed, and the site sees nothing before it. Then,
// with the operator in a take-over (which holds the screen), a third
// review waits in the queue the full --review-timeout (40 s, longer than
// an operation's 30 s) and only then fails needs_attention.
func TestTmuxNextAgentsReviewComesUp(t *testing.T) {
	const reviewTimeout = 40 * time.Second
	c, home, _ := startPageConsole(t, pageConsole{name: fmt.Sprintf("twunseen%d", os.Getpid()), cols: 160, rows: 40,
		agent: "first-agent", flags: "--review-timeout " + reviewTimeout.String()})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	first := c.cs
	if r := c.openApproved(ctx, c.site.URL+"/e2e/act.html?agent=first"); r["ok"] != true {
		t.Fatalf("the first agent's open: %v", r)
	}

	out, err := cli(t, home, "connect", "claude-code", "--json")
	if err != nil {
		t.Fatalf("connect: %v %s", err, out)
	}
	var minted struct{ Token, URL string }
	if err := json.Unmarshal([]byte(out), &minted); err != nil {
		t.Fatal(err)
	}
	c.cs = stacktest.Connect(t, minted.URL, minted.Token, sessionlessProtocol, "claude-code")
	opened := c.call(ctx, "browser_open", map[string]any{"url": c.site.URL + "/e2e/act.html?agent=second"})
	c.waitFor("the second agent's review on screen", 20*time.Second, func(p, _ string) bool {
		// The panel's own "from" line: nothing else on screen says it.
		return strings.Contains(p, "Allow origin in this tab") && strings.Contains(p, "from       claude-code")
	})
	time.Sleep(500 * time.Millisecond) // the review delay
	if n := countQuery(c.site, "/e2e/act.html", "agent=second"); n != 0 {
		t.Fatalf("the site saw %d requests before a", n)
	}
	c.keys("a")
	if r := pageResult(t, opened); r["ok"] != true {
		t.Fatalf("the second agent's open: %v", r)
	}
	if n := countQuery(c.site, "/e2e/act.html", "agent=second"); n == 0 {
		t.Fatal("the approved page never loaded")
	}

	// Take over the second agent's conversation (selected): the screen is
	// the operator's, so the first agent's next review waits in the queue.
	c.keys("t")
	c.waitText("PAUSED")
	c.cs = first
	asked := time.Now()
	queued := c.call(ctx, "browser_open", map[string]any{"url": c.site.URL + "/e2e/act.html?agent=queued"})
	c.waitText("needs attention")
	var res map[string]any
	select {
	case r := <-queued:
		b, _ := json.Marshal(r.StructuredContent)
		_ = json.Unmarshal(b, &res)
	case <-time.After(reviewTimeout + 30*time.Second):
		t.Fatal("the queued review never ended")
	}
	waited := time.Since(asked)
	if res["code"] != "needs_attention" || waited < reviewTimeout {
		t.Fatalf("the queued review ended after %v with %v; want needs_attention after %v", waited, res, reviewTimeout)
	}
	if n := countQuery(c.site, "/e2e/act.html", "agent=queued"); n != 0 {
		t.Fatalf("the site saw %d requests for an unseen review", n)
	}
	t.Logf("queued review: needs_attention after %v (--review-timeout %v; an operation's budget is 30s)", waited.Round(time.Second), reviewTimeout)
	c.keys("r")
	if code := c.quit(); code != "0" {
		t.Fatalf("the console exited %s", code)
	}
}
