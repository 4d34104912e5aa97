// Command tabwarden-bench runs what the console runs for agents — headless
// Chromium, the consent engine, the dispatcher and the MCP server — with an
// operator stand-in instead of the TUI, so scripts/peers/compare.mjs can
// measure browser_observe next to peer MCP servers on the same Chromium.
//
// It is a benchmark harness, never a way to run tabwarden: the stand-in
// approves every review as soon as the engine accepts a decision (the
// --review-delay key-ahead guard, 1 ms by default), which is exactly what
// the console exists to prevent. It binds 127.0.0.1 only, publishes no
// endpoint file and keeps its profile in a temporary directory it removes.
//
// Stdout carries JSON lines only: first {"url","token","chromium",...} once
// the server listens, then one {"event":"approved",...} per decision, with
// the review's creation and decision times in Unix milliseconds so a reader
// can attribute it to the tool call it held up. It shuts down (server, dispatcher, Chromium, engine,
// profile) when stdin closes or on SIGINT/SIGTERM.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/tabwarden/tabwarden/agent"
	"github.com/tabwarden/tabwarden/agent/mcpserver"
	"github.com/tabwarden/tabwarden/browser"
	"github.com/tabwarden/tabwarden/consent"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "tabwarden-bench:", err)
		os.Exit(1)
	}
}

func run() error {
	chromium := flag.String("chromium", "", "Chromium binary (empty: $TABWARDEN_CHROMIUM, then PATH)")
	listen := flag.String("listen", "127.0.0.1:0", "MCP listen address (loopback only)")
	delay := flag.Duration("review-delay", time.Millisecond, "key-ahead guard; the stand-in decides as soon as it passes (0 would mean the engine's 500 ms default)")
	profile := flag.String("consent", string(consent.ProfileStrict), "consent profile: strict, thread or trusted")
	verbose := flag.Bool("v", false, "log warnings and errors to stderr")
	flag.Parse()
	if *delay <= 0 {
		return errors.New("--review-delay must be positive")
	}
	switch p := consent.Profile(*profile); p {
	case consent.ProfileStrict, consent.ProfileThread, consent.ProfileTrusted:
	default:
		return fmt.Errorf("--consent %q: want strict, thread or trusted", p)
	}

	level := slog.Level(100) // above every level: silent
	if *verbose {
		level = slog.LevelWarn
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// Stdin closing is the parent's way to say "done", and also what
	// happens when the parent dies: either way Chromium must not outlive us.
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		stop()
	}()

	dir, err := os.MkdirTemp("", "tabwarden-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)

	out := newLineWriter(os.Stdout)
	eng := consent.New(consent.Config{Profile: consent.Profile(*profile), ReviewDelay: *delay})
	defer eng.Close()

	launchCtx, cancelLaunch := context.WithTimeout(ctx, 90*time.Second)
	br, err := browser.Launch(launchCtx, browser.Options{
		Chromium:   *chromium,
		ProfileDir: filepath.Join(dir, "profile"),
		Headless:   true,
		Gate:       eng,
		Logger:     logger,
	})
	cancelLaunch()
	if err != nil {
		return fmt.Errorf("browser: %w", err)
	}
	defer func() {
		if err := br.Close(); err != nil {
			logger.Error("close browser", "err", err)
		}
	}()
	d := agent.NewDispatcher(agent.DispatcherConfig{Engine: eng, Browser: br})
	defer d.Close()
	srv, err := mcpserver.New(mcpserver.Config{
		Surface:            d,
		Engine:             eng,
		Listen:             *listen,
		SessionIdleTimeout: -1,
		Version:            "bench",
		Logger:             logger,
	})
	if err != nil {
		return err
	}
	url, err := srv.Start(ctx)
	if err != nil {
		return fmt.Errorf("mcp server: %w", err)
	}
	defer srv.Close()

	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		operate(ctx, eng, *delay, out)
	}()
	defer wg.Wait()

	bin, _ := browser.FindChromium(*chromium)
	out.write(map[string]any{
		"url": url, "token": srv.DefaultToken().Secret, "chromium": bin,
		"browser": br.String(), "consent": eng.Profile(), "reviewDelayMs": ms(*delay),
	})
	<-ctx.Done()
	return nil
}

// operate is the operator stand-in: it brings each queued review on screen
// (selecting its tab, as the operator would) and approves it once the
// key-ahead guard lets a decision through. It never denies.
func operate(ctx context.Context, eng *consent.Engine, delay time.Duration, out *lineWriter) {
	changes, stop := eng.Changes()
	defer stop()
	for {
		st := eng.Snapshot()
		switch {
		case st.Focused != nil:
			if approve(ctx, eng, *st.Focused, delay, out) {
				continue
			}
		case len(st.Queue) > 0:
			r := st.Queue[0]
			if st.Selection.Conversation != r.Conversation || st.Selection.Tab != r.Tab {
				eng.Select(r.Conversation, r.Tab)
				continue
			}
		}
		select {
		case <-changes:
		case <-ctx.Done():
			return
		}
	}
}

// approve reports whether r was approved; false means it resolved some
// other way (its call was cancelled or timed out) or the run is ending.
func approve(ctx context.Context, eng *consent.Engine, r consent.Review, delay time.Duration, out *lineWriter) bool {
	for {
		if wait := time.Until(r.ShownAt.Add(delay)); wait > 0 {
			select {
			case <-time.After(wait):
			case <-ctx.Done():
				return false
			}
		}
		now := time.Now()
		err := eng.Decide(r.ID, true)
		if errors.Is(err, consent.ErrTooEarly) {
			r.ShownAt = time.Now()
			continue
		}
		if err != nil {
			out.write(map[string]any{"event": "decide_failed", "kind": r.Kind, "error": err.Error()})
			return false
		}
		out.write(map[string]any{
			"event": "approved", "kind": r.Kind, "origin": r.Origin, "tab": r.Tab,
			"createdMs": r.Created.UnixMilli(), "decidedMs": now.UnixMilli(),
			"waitMs": ms(now.Sub(r.Created)),
		})
		return true
	}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// lineWriter serialises JSON lines from the main and operator goroutines.
type lineWriter struct {
	mu  sync.Mutex
	enc *json.Encoder
}

func newLineWriter(w io.Writer) *lineWriter { return &lineWriter{enc: json.NewEncoder(w)} }

func (w *lineWriter) write(v any) {
	w.mu.Lock()
	defer w.mu.Unlock()
	_ = w.enc.Encode(v)
}
