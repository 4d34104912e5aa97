package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/tabwarden/tabwarden/consent"
)

// --notify-command (design.md §4, "The operator is called"): a command run
// through the shell when a new review waits, for ntfy, notify-send or a
// chat webhook. It learns only the review's title, conversation, origin,
// kind and the pending count, in its environment — never values, typed
// text, tokens or page text. It runs beside the engine, never in its way:
// one at a time, at most once per notifyCommandGap (reviews that arrive
// meanwhile are told by the next run's pending count), with its own
// deadline; a failing or hanging command costs a line in the activity log
// and nothing else.

const (
	notifyCommandGap     = 10 * time.Second
	notifyCommandTimeout = 10 * time.Second
	notifyFieldMax       = 200
)

// notifyEnv is what the command learns of review r.
func notifyEnv(r consent.Review, pending int) []string {
	conv := r.ConversationName
	if conv == "" {
		conv = string(r.Conversation)
	}
	return []string{
		"TABWARDEN_REVIEW_TITLE=" + envField(r.Title),
		"TABWARDEN_REVIEW_KIND=" + envField(string(r.Kind)),
		"TABWARDEN_CONVERSATION=" + envField(conv),
		"TABWARDEN_ORIGIN=" + envField(r.Origin),
		"TABWARDEN_PENDING=" + strconv.Itoa(pending),
	}
}

// envField keeps a field printable and bounded: a conversation's name
// comes from the agent's client and must not smuggle control characters
// into a shell script's output or a chat message.
func envField(s string) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || r == '\u2028' || r == '\u2029' {
			return ' '
		}
		return r
	}, s)
	if r := []rune(s); len(r) > notifyFieldMax {
		s = string(r[:notifyFieldMax])
	}
	return s
}

// runNotifyCommand watches eng for new reviews until ctx ends and runs cmd
// for them. It returns when its last run has ended.
func runNotifyCommand(ctx context.Context, eng *consent.Engine, cmd string) {
	ch, unsub := eng.Changes()
	defer unsub()
	known := map[string]bool{}
	for _, r := range eng.Snapshot().Queue {
		known[r.ID] = true // waiting before the console started: none can
	}
	var (
		done    chan struct{}   // the run in flight, nil when none
		waiting *consent.Review // the newest review not yet told
		next    time.Time       // when the next run may start
		timer   = time.NewTimer(0)
		pending int
	)
	<-timer.C
	defer func() {
		if done != nil {
			<-done
		}
	}()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ch:
			st := eng.Snapshot()
			live := map[string]bool{}
			for i, r := range st.Queue {
				live[r.ID] = true
				if !known[r.ID] {
					waiting = &st.Queue[i]
				}
			}
			known = live
			pending = len(st.Queue)
		case <-timer.C:
		case <-done:
			done = nil
		}
		if waiting == nil || done != nil {
			continue
		}
		if wait := time.Until(next); wait > 0 {
			timer.Reset(wait)
			continue
		}
		r := *waiting
		waiting = nil
		next = time.Now().Add(notifyCommandGap)
		done = make(chan struct{})
		go func(r consent.Review, pending int, done chan struct{}) {
			defer close(done)
			if err := execNotify(ctx, cmd, notifyEnv(r, pending)); err != nil {
				slog.Warn("notify command failed", "err", err)
				eng.Note(r.Conversation, "notify command failed: "+err.Error(), true)
			}
		}(r, pending, done)
	}
}

func execNotify(ctx context.Context, cmd string, env []string) error {
	ctx, cancel := context.WithTimeout(ctx, notifyCommandTimeout)
	defer cancel()
	c := exec.CommandContext(ctx, "/bin/sh", "-c", cmd)
	c.Env = append(os.Environ(), env...)
	c.Stdin, c.Stdout, c.Stderr = nil, nil, nil // never the TUI's terminal
	c.WaitDelay = time.Second
	err := c.Run()
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("no answer within %s", notifyCommandTimeout)
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return fmt.Errorf("exit status %d", ee.ExitCode())
	}
	return err
}
