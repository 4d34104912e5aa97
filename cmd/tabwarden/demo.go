package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/tabwarden/tabwarden/agent"
	"github.com/tabwarden/tabwarden/agent/demo"
	"github.com/tabwarden/tabwarden/agent/demo/fixture"
	"github.com/tabwarden/tabwarden/agent/mcpserver"
	"github.com/tabwarden/tabwarden/browser"
	"github.com/tabwarden/tabwarden/consent"
	"github.com/tabwarden/tabwarden/consent/audit"
	"github.com/tabwarden/tabwarden/policy"
	"github.com/tabwarden/tabwarden/tui"
)

// Conversations of the demo. The demo agent's is added first so it is the
// one selected when the screen comes up.
const (
	demoConv       consent.ConversationID = "demo"
	demoVisitor    consent.ConversationID = "demo-visitor"
	demoPolicyConv consent.ConversationID = "demo-policy"
)

// demoReviewTimeout is how long a demo review waits for its key, on screen
// or queued behind an unselected tab (so it is also the demo's operation
// deadline); the countdown still shows on every review.
const demoReviewTimeout = 5 * time.Minute

func newDemoCmd(o *options, s streams) *cobra.Command {
	return &cobra.Command{
		Use:   "demo",
		Short: "Walk the full consent journey against the embedded fixture site",
		Long: `demo runs the console with a deterministic scripted agent that walks the
reference journey (docs/design.md §10) against the embedded fixture site, served on
127.0.0.1: no LLM, no network. The agent says in the activity log what it
asks and why; you answer each review with a key, and sign in by hand when it
hands over: in the Chromium window, or from the terminal with v (the page)
and i (typing into it). Reviews wait up to 5 minutes for your key, on
screen or queued (the console's own default is 60 s), so there is time to
read.

Chromium is headed (it needs a display: use xvfb-run -a, or --headless
and the console signs in for you) and runs on a fresh temporary profile
unless --profile is given. A second Chromium, launched with a policy that
lists only the fixture and blocks uploads, runs the policy steps. The
defaults listed below for --profile and --review-timeout are the
console's; the demo uses a temporary profile and 5 minutes unless they
are given.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runDemo(cmd.Context(), o, s)
		},
	}
}

func runDemo(ctx context.Context, o *options, s streams) error {
	if consent.Profile(o.consent) != consent.ProfileStrict {
		// The narration tells the newcomer which review comes next and
		// which key answers it; under thread or trusted most of those
		// reviews never come (the journey tests cover those profiles).
		return badUsagef("demo walks the strict profile, where every gate asks; run the console with --consent %s to see that profile", o.consent)
	}
	if len(o.policies) > 0 || o.browserURL != "" {
		// The journey needs an unrestricted browser of its own: an operator
		// policy or an attached browser would change what it demonstrates.
		return badUsagef("demo runs its own browsers and policy; --policy and --browser-url do not apply")
	}
	if !o.headless {
		if err := openDisplay(ctx, os.Getenv); err != nil {
			return failure(fmt.Errorf("the demo opens a headed Chromium and %v: "+
				"run it under `xvfb-run -a` (e.g. `xvfb-run -a tabwarden demo`), forward one with `ssh -X`, or run `tabwarden demo --headless` (the console then signs in for you)", err))
		}
	}
	if !isTerminal(s.in) || !isTerminal(s.out) {
		return failure(errors.New("the demo needs a terminal on stdin and stdout"))
	}

	auditLog, err := openAudit(o.audit)
	if err != nil {
		return failure(fmt.Errorf("open audit log: %w", err))
	}
	defer auditLog.Close()
	stopRun := recordRun(auditLog, "demo", o)
	defer stopRun(nil)
	restoreLog, err := logToFile()
	if err != nil {
		return err
	}
	defer restoreLog()

	// A newcomer reads the narration and each review for the first time;
	// the reference 60 s (30 s for a review that waits in the queue until
	// its tab is selected) would end the demo under them.
	// An explicit --review-timeout still wins.
	reviewTimeout := demoReviewTimeout
	if o.reviewTimeoutSet {
		reviewTimeout = o.reviewTimeout
	}
	eng := consent.New(consent.Config{Profile: consent.Profile(o.consent), ReviewDelay: o.reviewDelay,
		ReviewTimeout: reviewTimeout, OpDeadline: demoReviewTimeout, Audit: auditLog, GrantWindow: o.grantWindow,
		Info: consent.Info{Browser: browserNotStarted, Endpoint: mcpNotStarted, Policy: "none (demo; the policy run has its own)"}})
	defer eng.Close()

	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	// The screen comes up once both browsers run, which takes seconds.
	browsers := "two Chromium windows"
	if o.headless {
		browsers = "two headless Chromiums (no window: v shows the page)"
	}
	fmt.Fprintf(s.out, "tabwarden demo: starting the fixture site and %s…\n", browsers)
	w, err := startDemoWorld(ctx, o, eng, auditLog)
	if err != nil {
		return err
	}
	defer w.close()

	var walker sync.WaitGroup
	walker.Go(func() {
		cfg := w.demoConfig(eng)
		if o.headless {
			cfg.SignIn = w.signIn
		}
		err := demo.New(cfg).Run(ctx, demo.Journey())
		if err != nil && !errors.Is(err, demo.ErrStopped) && ctx.Err() == nil {
			slog.Error("demo journey", "err", err)
		}
	})
	// The demo's screen is the console's: the action review's target is
	// marked in its tab, and v shows the page of either browser.
	for _, b := range []*browser.Browser{w.agents.browser, w.policyBrowser} {
		walker.Go(func() { markReviews(ctx, eng, b) })
	}
	notify, _ := tui.ParseNotifyMode(o.notify) // validated with the flags
	err = tui.Run(ctx, eng, tui.Options{
		Version:      version,
		Minter:       w.agents,
		Notify:       notify,
		Headless:     o.headless,
		Page:         pageSources{w.agents.browser, w.policyBrowser},
		PageProtocol: tui.PageProtocol(o.pageView),
	})
	cancel()
	walker.Wait()
	if err != nil && !errors.Is(err, context.Canceled) {
		return failure(err)
	}
	return nil
}

// demoWorld is everything the demo runs besides the engine and the screen:
// two fixture origins, the console's agent side on a demo profile, and the
// policy run's own browser and dispatch.
type demoWorld struct {
	site, second *fixture.Server
	agents       *agentSide

	policyBrowser  *browser.Browser
	policyDispatch *agent.Dispatcher
	policy         *policy.Policy

	tempDirs []string
}

// startDemoWorld starts the fixture sites and both browsers and registers
// the demo's conversations with eng. o.profile, when set, is the main
// browser's profile; otherwise a temporary one is used and removed at close.
func startDemoWorld(ctx context.Context, o *options, eng *consent.Engine, sink audit.Sink) (w *demoWorld, err error) {
	w = &demoWorld{}
	defer func() {
		if err != nil {
			w.close()
		}
	}()
	if w.site, err = fixture.New(); err != nil {
		return nil, failure(fmt.Errorf("fixture site: %w", err))
	}
	if w.second, err = fixture.New(); err != nil {
		return nil, failure(fmt.Errorf("fixture site: %w", err))
	}
	addDemoConversations(eng)

	main := *o
	// The demo is no console agents configure: it takes a free port, never
	// the user's stable one (a console may hold it).
	main.mcpListen = cmp.Or(main.mcpListen, mcpserver.DefaultListen)
	if main.profile == "" {
		dir, err := w.tempDir()
		if err != nil {
			return nil, failure(err)
		}
		main.profile = dir
	}
	// Policy is fixed at launch, so the policy run is its own Chromium.
	raw := fmt.Sprintf(`{"execution":{"browserOrigins":[%q],"blockBrowserUploads":true}}`, w.site.URL)
	if w.policy, err = policy.Parse("demo-policy.json", []byte(raw)); err != nil {
		return nil, failure(fmt.Errorf("demo policy: %w", err))
	}
	dir, err := w.tempDir()
	if err != nil {
		return nil, failure(err)
	}

	// The two Chromiums do not depend on each other, so they launch at
	// once: the screen waits for the slower launch, not for both in turn.
	var policyErr error
	var launches sync.WaitGroup
	launches.Go(func() {
		w.policyBrowser, policyErr = browser.Launch(ctx, browser.Options{
			Chromium: o.chromium, ProfileDir: dir, Headless: o.headless,
			Gate: eng, Policy: w.policy, Logger: slog.Default(),
			// The header describes the agents' Chromium, the console's
			// own (docs/decisions.md, "Issue 25"); the start line names
			// this one.
			Unshown: true,
		})
	})
	w.agents, err = startAgents(ctx, &main, eng, nil, sink)
	launches.Wait()
	if err != nil {
		return nil, err
	}
	if policyErr != nil {
		return nil, failure(fmt.Errorf("policy-run browser: %w", policyErr))
	}
	w.policyDispatch = agent.NewDispatcher(agent.DispatcherConfig{Engine: eng, Browser: w.policyBrowser, Policy: w.policy, Audit: sink})

	eng.Note(demoConv, fmt.Sprintf("Welcome: I am a scripted agent. Before each step I say here what I ask and which key you press. "+
		"Fixture site %s; second origin %s (never approve it).", w.site.URL, w.second.URL), false)
	return w, nil
}

// addDemoConversations registers the demo's conversations, the agent's
// first so it is selected when the screen comes up.
func addDemoConversations(eng *consent.Engine) {
	eng.AddConversation(demoConv, "demo agent")
	// Names without a colon: the activity log writes "name: text".
	eng.AddConversation(demoVisitor, "demo second agent")
	eng.AddConversation(demoPolicyConv, "demo policy run")
}

func (w *demoWorld) tempDir() (string, error) {
	dir, err := os.MkdirTemp("", "tabwarden-demo-")
	if err != nil {
		return "", err
	}
	w.tempDirs = append(w.tempDirs, dir)
	return filepath.Join(dir, "profile"), nil
}

// demoConfig walks the journey in-process: every conversation reaches the
// engine through a Dispatcher, as the MCP server's would.
func (w *demoWorld) demoConfig(eng *consent.Engine) demo.Config {
	return demo.Config{
		Surface: w.agents.dispatch, Conv: demoConv, Engine: eng,
		Site: w.site, Second: w.second,
		Visitor: w.agents.dispatch, VisitorConv: demoVisitor,
		PolicySurface: w.policyDispatch, PolicyConv: demoPolicyConv,
		CloseTab: w.agents.browser.CloseTab,
	}
}

// signIn is the operator's hands in a run without a window: it fills and
// submits the fixture's sign-in form with typed input, as a person typing
// would, and returns once the site has answered with the session
// page. Only the console calls it; no tool reaches it.
func (w *demoWorld) signIn(ctx context.Context, tab string) error {
	return w.signInAs(ctx, demoConv, consent.TabID(tab))
}

// signInAs signs in on conv's tab. The take-over stops the conversation's
// loads on a goroutine of its own (browser.takeOver), so a sign-in started
// the instant the engine says paused can be stopped under the person's
// hands; then the person tries again, as someone would. Once the server
// took the POST, trying again means opening /session, never a second
// sign-in.
func (w *demoWorld) signInAs(ctx context.Context, conv consent.ConversationID, tab consent.TabID) error {
	// Typed through CDP as the person's keyboard would (browser's operator
	// verbs): the requests pass the same hook as the person's own during a
	// take-over, under policy and without a grant.
	b := w.agents.browser
	before := w.loads("GET", "/session")
	var err error
	for attempt := 1; ; attempt++ {
		if w.loads("POST", "/signin") == 0 {
			err = b.OperatorSubmitForm(ctx, conv, tab, []browser.FormField{
				{Name: "username", Text: demo.User}, {Name: "password", Text: demo.Password},
			})
		} else {
			err = b.OperatorOpen(ctx, conv, tab, w.site.URL+"/session")
		}
		if err == nil {
			n := 0
			wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			_, err = w.site.WaitFor(wctx, func(q fixture.Request) bool {
				if q.Method == "GET" && q.Path == "/session" {
					n++
				}
				return n > before
			})
			cancel()
			if err == nil {
				return nil
			}
		}
		if attempt == 3 || ctx.Err() != nil {
			return fmt.Errorf("the sign-in never reached /session (%d attempts): %w", attempt, err)
		}
		slog.Info("demo sign-in did not reach /session; trying again", "attempt", attempt, "err", err)
	}
}

// loads counts the requests the main fixture site saw for method and path.
func (w *demoWorld) loads(method, path string) int {
	n := 0
	for _, q := range w.site.Requests() {
		if q.Method == method && q.Path == path {
			n++
		}
	}
	return n
}

// close stops everything innermost first; safe on a partly started world.
func (w *demoWorld) close() {
	if w.policyDispatch != nil {
		w.policyDispatch.Close()
	}
	if w.policyBrowser != nil {
		if err := w.policyBrowser.Close(); err != nil {
			slog.Error("close policy-run browser", "err", err)
		}
	}
	if w.agents != nil {
		w.agents.close()
	}
	for _, s := range []*fixture.Server{w.site, w.second} {
		if s != nil {
			s.Close()
		}
	}
	for _, d := range w.tempDirs {
		_ = os.RemoveAll(d)
	}
}
