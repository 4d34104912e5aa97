package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tabwarden/tabwarden/consent"
)

func notifyEngine(t *testing.T) *consent.Engine {
	t.Helper()
	e := consent.New(consent.Config{ReviewDelay: 250 * time.Millisecond})
	t.Cleanup(e.Close)
	e.AddConversation("c1", "agent\x1b[2J one")
	e.PutTab(consent.TabInfo{ID: "t1", Conversation: "c1", URL: "https://shop.test/"})
	e.Select("c1", "t1")
	return e
}

// waitFile waits for path to hold at least n lines.
func waitFile(t *testing.T, path string, n int) []string {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		b, _ := os.ReadFile(path)
		lines := strings.Split(strings.TrimSpace(string(b)), "\n")
		if len(b) > 0 && len(lines) >= n {
			return lines
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %q after 15s, want %d line(s)", path, b, n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestNotifyCommandGetsTitleConversationOriginNeverValues(t *testing.T) {
	e := notifyEngine(t)
	out := filepath.Join(t.TempDir(), "calls")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		runNotifyCommand(ctx, e, `printf '%s|%s|%s|%s|%s\n' "$TABWARDEN_REVIEW_TITLE" "$TABWARDEN_REVIEW_KIND" "$TABWARDEN_CONVERSATION" "$TABWARDEN_ORIGIN" "$TABWARDEN_PENDING" >>`+out+`; env >>`+out+`.env`)
	}()
	defer func() { cancel(); <-done }()
	time.Sleep(50 * time.Millisecond) // the watcher has subscribed
	askCtx, stop := context.WithCancel(context.Background())
	defer stop()
	go func() {
		_ = e.Ask(askCtx, consent.Request{Gate: consent.GateAction, Conversation: "c1", Tab: "t1", Origin: "https://shop.test",
			Action: &consent.Action{Type: consent.ActionFill, Ref: "e1", Name: "Note", Text: "typed-secret-value"}})
	}()
	go func() {
		_ = e.Ask(askCtx, consent.Request{Gate: consent.GateRead, Conversation: "c1", Tab: "t1", Origin: "https://shop.test"})
	}()
	lines := waitFile(t, out, 1)
	f := strings.Split(lines[0], "|")
	if len(f) != 5 || (f[0] != "Allow this action?" && f[0] != "Allow reading this website?") || f[2] != "agent [2J one" || f[3] != "https://shop.test" || (f[4] != "1" && f[4] != "2") {
		t.Fatalf("command saw %q", lines[0])
	}
	env, _ := os.ReadFile(out + ".env")
	if strings.Contains(string(env), "typed-secret-value") || strings.Contains(string(env), "\x1b") {
		t.Fatalf("the command's environment holds a value or an escape:\n%s", env)
	}
	// Rate-limited: the second review, a moment later, is not told yet.
	time.Sleep(time.Second)
	if got := waitFile(t, out, 1); len(got) != 1 {
		t.Fatalf("ran %d times within %s: %q", len(got), notifyCommandGap, got)
	}
}

func TestFailingNotifyCommandNeverBlocksAReview(t *testing.T) {
	e := notifyEngine(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); runNotifyCommand(ctx, e, "exit 3") }()
	defer func() { cancel(); <-done }()
	time.Sleep(50 * time.Millisecond)
	asked := make(chan error, 1)
	go func() {
		asked <- e.Ask(context.Background(), consent.Request{Gate: consent.GateRead, Conversation: "c1", Tab: "t1", Origin: "https://shop.test"})
	}()
	deadline := time.Now().Add(15 * time.Second)
	for {
		st := e.Snapshot()
		failed := false
		for _, a := range st.Activity {
			failed = failed || strings.Contains(a.Text, "notify command failed: exit status 3")
		}
		if failed && st.Focused != nil {
			time.Sleep(300 * time.Millisecond) // the key-ahead guard
			if err := e.Decide(st.Focused.ID, true); err != nil {
				t.Fatal(err)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no failure line or no review: %+v", st.Activity)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := <-asked; err != nil {
		t.Fatalf("the review did not go through: %v", err)
	}
}
