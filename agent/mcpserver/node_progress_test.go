package mcpserver

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tabwarden/tabwarden/consent"
)

// nodeClientDir is scripts/node-mcp-client with its pinned packages
// installed (npm ci from package-lock.json).
func nodeClientDir(t *testing.T) (node, dir string) {
	t.Helper()
	node = needTool(t, "node")
	dir, err := filepath.Abs(filepath.Join("..", "..", "scripts", "node-mcp-client"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@modelcontextprotocol", "sdk", "package.json")); err != nil {
		npm := needTool(t, "npm")
		install := exec.CommandContext(t.Context(), npm, "ci", "--no-audit", "--no-fund")
		install.Dir = dir
		if out, err := install.CombinedOutput(); err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("npm ci in %s: %v\n%s", dir, err, out)
			}
			t.Skipf("npm ci in %s failed (offline?): %v\n%s", dir, err, out)
		}
	}
	return node, dir
}

type nodeReview struct {
	SessionID string `json:"sessionId"`
	Review    struct {
		IsError   bool   `json:"isError"`
		Text      string `json:"text"`
		Error     string `json:"error"`
		ElapsedMS int64  `json:"elapsedMs"`
		Progress  []struct {
			Progress float64 `json:"progress"`
			Message  string  `json:"message"`
			AtMS     int64   `json:"atMs"`
		} `json:"progress"`
	} `json:"review"`
}

// runNodeReview runs the Node client's browser_open with a 10 s request
// timeout against a server whose call waits on a review the operator
// approves hold after it appears.
func runNodeReview(t *testing.T, mode string, hold time.Duration) (nodeReview, *testServer, consent.Review) {
	t.Helper()
	node, dir := nodeClientDir(t)
	ts := startReviewServer(t, nil) // the real 5 s progress interval
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "client.mjs", ts.url, ts.secret, mode)
	cmd.Dir = dir
	cmd.Stderr = os.Stderr
	type output struct {
		out []byte
		err error
	}
	done := make(chan output, 1)
	go func() {
		out, err := cmd.Output()
		done <- output{out, err}
	}()
	r := onScreen(t, ts.engine)
	decided := make(chan error, 1)
	go func() {
		select {
		case <-time.After(time.Until(r.ShownAt.Add(hold))):
			decided <- ts.engine.Decide(r.ID, true)
		case <-ctx.Done():
			decided <- ctx.Err()
		}
	}()
	o := <-done
	if o.err != nil {
		t.Fatalf("node client: %v\n%s", o.err, o.out)
	}
	var got nodeReview
	if err := json.Unmarshal(o.out, &got); err != nil {
		t.Fatalf("node client printed %q: %v", o.out, err)
	}
	if mode == "review" {
		if err := <-decided; err != nil {
			t.Fatalf("approve after %s: %v", hold, err)
		}
	}
	return got, ts, r
}

// TestNodeClientSurvivesLongReview: the TypeScript SDK with a 10 s request
// timeout and resetTimeoutOnProgress completes a 25 s review, because the
// server sends progress every 5 s while the call waits (design.md §5).
func TestNodeClientSurvivesLongReview(t *testing.T) {
	t.Parallel()
	got, _, _ := runNodeReview(t, "review", 25*time.Second)
	t.Logf("Node client: %d progress notifications, answered after %d ms", len(got.Review.Progress), got.Review.ElapsedMS)
	if got.Review.Error != "" || got.Review.IsError || !strings.Contains(got.Review.Text, `"ok":true`) {
		t.Fatalf("the 25 s review did not complete for a 10 s-timeout client: %+v", got.Review)
	}
	if got.Review.ElapsedMS < 25_000 {
		t.Fatalf("answered after %d ms, before the review was decided", got.Review.ElapsedMS)
	}
	if len(got.Review.Progress) < 4 {
		t.Fatalf("%d progress notifications during a 25 s review, want at least 4", len(got.Review.Progress))
	}
	if got.SessionID == "" {
		t.Errorf("the Node client negotiated no session (the stateful transport is the one under test)")
	}
}

// TestNodeClientTimeoutWithdrawsReview is the control: without
// resetTimeoutOnProgress the same client gives up at 10 s, and its
// cancellation withdraws the review (nothing it would have allowed runs).
func TestNodeClientTimeoutWithdrawsReview(t *testing.T) {
	t.Parallel()
	got, ts, r := runNodeReview(t, "review-no-reset", 25*time.Second)
	if got.Review.Error == "" || !strings.Contains(strings.ToLower(got.Review.Error), "timed out") {
		t.Fatalf("without resetTimeoutOnProgress the 10 s client still completed: %+v", got.Review)
	}
	rec := waitWithdrawn(t, ts, r.ID, "") // notifications/cancelled or the DELETE after it
	t.Logf("withdrawn after the client's timeout: %s", rec.Note)
	if err := ts.engine.Decide(r.ID, true); err != consent.ErrNoSuchReview {
		t.Fatalf("a after the client gave up: %v, want ErrNoSuchReview", err)
	}
}
