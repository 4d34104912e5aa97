package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"sync"
	"syscall"
	"time"

	"github.com/charmbracelet/x/term"

	"github.com/tabwarden/tabwarden/agent/mcpserver"
	"github.com/tabwarden/tabwarden/consent"
	"github.com/tabwarden/tabwarden/consent/audit"
	"github.com/tabwarden/tabwarden/policy"
	"github.com/tabwarden/tabwarden/tui"
)

// Header texts while the browser and the MCP server are not (yet) up: in
// --script mode they never start, since scripted requests exercise the
// screen alone.
const (
	browserNotStarted = "not started (--script drives the screen only)"
	mcpNotStarted     = "not started (--script drives the screen only)"
)

// runConsole is `tabwarden` without a command: it validates everything it
// was given, then hands the terminal to the TUI until the operator quits.
func runConsole(ctx context.Context, o *options, s streams) error {
	if err := o.checkSSHKeys(); err != nil {
		return err
	}
	pol, err := policy.CheckFiles(o.policies)
	var ve *policy.ValidationError
	if errors.As(err, &ve) {
		for _, pr := range ve.Problems {
			fmt.Fprintln(s.err, pr.String())
		}
		return &exitError{code: exitUsage, err: fmt.Errorf("managed policy rejected: %d problem(s); nothing was started", len(ve.Problems))}
	}
	if err != nil {
		return failure(err)
	}

	var steps []scriptStep
	if o.script != "" {
		if steps, err = loadScript(o.script); err != nil {
			return usageErrorf("--script: %v", err)
		}
	}

	if !isTerminal(s.in) || !isTerminal(s.out) {
		return failure(errors.New("the console needs a terminal on stdin and stdout; for a non-interactive check run `tabwarden doctor`"))
	}
	if len(steps) == 0 {
		if err := needDisplay(ctx, o, os.Getenv, runtime.GOOS); err != nil {
			return failure(err)
		}
	}

	auditLog, err := openAudit(o.audit)
	if err != nil {
		return failure(fmt.Errorf("open audit log: %w", err))
	}
	defer func() {
		if cerr := auditLog.Close(); cerr != nil {
			slog.Error("close audit log", "err", cerr)
		}
	}()
	var runErr error
	stopRun := recordRun(auditLog, "console", o)
	defer func() { stopRun(runErr) }()

	restoreLog, err := logToFile()
	if err != nil {
		return err
	}
	defer restoreLog()

	cfg := consent.Config{
		Profile:       consent.Profile(o.consent),
		ReviewDelay:   o.reviewDelay,
		ReviewTimeout: o.reviewTimeout,
		Audit:         auditLog,
		Info: consent.Info{
			Browser:  browserNotStarted,
			Endpoint: mcpNotStarted,
			Policy:   pol.Summary(),
		},
	}
	cfg.GrantWindow = o.grantWindow
	if pol != nil {
		cfg.Floor = consent.Profile(pol.ConsentFloor)
		cfg.GrantLimits = grantLimits(pol)
	}
	eng := consent.New(cfg)
	if eng.Profile() != cfg.Profile {
		eng.Note("", fmt.Sprintf("consent profile %s lowered to %s by managed policy", cfg.Profile, eng.Profile()), true)
	}
	if w := eng.GrantWindow(); w < o.grantWindow {
		eng.Note("", fmt.Sprintf("grant window %s cut to %s by managed policy (maxGrantMinutes)", o.grantWindow, w), true)
	}
	slog.Info("console started", "profile", eng.Profile(), "reviewDelay", o.reviewDelay, "reviewTimeout", o.reviewTimeout,
		"audit", auditLog.Path(), "policy", pol.Summary(), "script", o.script)

	defer eng.Close()

	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var feeders sync.WaitGroup
	notify, _ := tui.ParseNotifyMode(o.notify) // validated with the flags
	tuiOpts := tui.Options{Version: version, Headless: o.headless, PageProtocol: tui.PageProtocol(o.pageView), Notify: notify}
	if o.notifyCmd != "" {
		feeders.Go(func() { runNotifyCommand(ctx, eng, o.notifyCmd) })
	}
	if steps != nil {
		// Scripted requests exercise the screen alone: no browser, no agents.
		feeders.Go(func() { feedScript(ctx, eng, steps) })
	} else {
		o.tokenStore = mcpserver.TokenStorePath()
		agents, err := startAgents(ctx, o, eng, pol, auditLog)
		if err != nil {
			return err
		}
		defer agents.close()
		tuiOpts.Minter = agents
		tuiOpts.Page = pageSources{agents.browser}
		feeders.Go(func() { markReviews(ctx, eng, agents.browser) })
		// Quitting withdraws the agents' calls before the TUI cancels the
		// conversations, so each call's result names the shutdown.
		tuiOpts.BeforeQuit = agents.dispatch.Withdraw
		if o.run != nil { // tabwarden run "task"
			b, err := startBuiltin(ctx, o.run, eng, agents.server)
			if err != nil {
				return err
			}
			defer b.stop()
			// p gives the running console another task (design.md §12).
			tuiOpts.StartTask = b.start
		}
	}
	stopSSH, err := startSSH(ctx, o, eng, tuiOpts.Page, tuiOpts.PageProtocol, tuiOpts.Notify)
	if err != nil {
		return err
	}
	defer stopSSH()
	err = tui.Run(ctx, eng, tuiOpts)
	cancel()
	feeders.Wait()
	slog.Info("console stopped", "err", err)
	if err != nil && !errors.Is(err, context.Canceled) {
		runErr = err
		return failure(err)
	}
	return nil
}

// grantLimits is managed policy's say on scoped grants, for the engine.
func grantLimits(pol *policy.Policy) consent.GrantLimits {
	l := consent.GrantLimits{MaxWindow: time.Duration(pol.MaxGrantMinutes) * time.Minute}
	if pol.Grantable != nil {
		l.Grantable = []consent.GrantClass{}
		for _, c := range pol.Grantable {
			l.Grantable = append(l.Grantable, consent.GrantClass(c))
		}
	}
	return l
}

func openAudit(path string) (*audit.FileLog, error) {
	if path != "" {
		return audit.Open(path)
	}
	return audit.OpenDaily(audit.DefaultDir())
}

// logToFile sends slog to the log file until restore is called. The TUI
// owns the terminal: anything written to stderr meanwhile would tear the
// screen.
func logToFile() (restore func(), err error) {
	f, err := openLogFile(logPath())
	if err != nil {
		return nil, failure(fmt.Errorf("open log file: %w", err))
	}
	prev := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(f, nil)))
	return func() {
		slog.SetDefault(prev)
		_ = f.Close()
	}, nil
}

func openLogFile(path string) (*os.File, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, err
	}
	return os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
}

func isTerminal(v any) bool {
	f, ok := v.(*os.File)
	return ok && term.IsTerminal(f.Fd())
}
