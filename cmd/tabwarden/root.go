package main

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/tabwarden/tabwarden/agent"
	"github.com/tabwarden/tabwarden/agent/mcpserver"
	"github.com/tabwarden/tabwarden/browser"
	"github.com/tabwarden/tabwarden/consent"
	"github.com/tabwarden/tabwarden/tui"
)

// options holds the global and console flags (design.md §3, §4, §8, §9).
// Global ones are persistent so `tabwarden doctor --chromium X` checks the
// same Chromium the console would use.
type options struct {
	consent     string
	reviewDelay time.Duration
	grantWindow time.Duration // design.md §4: how long `s` allows a class of step
	notify      string        // design.md §4: desktop, bell or off
	notifyCmd   string        // design.md §4: run on each new review (rate-limited)
	policies    []string
	profile     string
	chromium    string
	headless    bool
	browserURL  string
	// browserToken is the fleet's credential (--browser-token, else
	// $TABWARDEN_BROWSER_TOKEN); never printed.
	browserToken string
	mcpListen    string // "": this user's stable port (stableport.go)
	// tokenStore keeps named agent tokens across restarts (the console
	// sets it; in-process tests leave it empty).
	tokenStore  string
	audit       string
	maxUpload   int64
	sessionIdle time.Duration
	tools       string
	script      string // hidden: scripted consent requests for exercising the screen

	// reviewTimeout is --review-timeout; reviewTimeoutSet says it was
	// given (the demo keeps its own longer timeout otherwise).
	reviewTimeout    time.Duration
	reviewTimeoutSet bool
	sshListen        string      // design.md §11: serve the console over SSH ("" = off)
	sshKeys          string      // the operators' authorized keys file
	pageView         string      // design.md §13: the page view's image protocol (auto asks the terminal)
	run              *runOptions // tabwarden run: the built-in agent's task and model
}

// streams are the process's standard streams, injected so tests and the
// console share one code path.
type streams struct {
	in       io.Reader
	out, err io.Writer
}

func execute(args []string, in io.Reader, out, errw io.Writer) int {
	slog.SetDefault(newCLILogger(errw))

	root := newRootCmd(streams{in: in, out: out, err: errw})
	root.SetArgs(args)
	cmd, err := root.ExecuteC()
	code := exitCodeOf(err)
	if err == nil {
		return code
	}
	var ee *exitError
	if !errors.As(err, &ee) || !ee.reported {
		// A plain line, not a log record: the console may have pointed
		// slog's default at its log file, and the operator reads the final
		// error on the terminal the TUI released.
		fmt.Fprintf(errw, "tabwarden: %v\n", err)
	}
	if code == exitUsage && (!errors.As(err, &ee) || ee.usage) {
		if cmd == nil {
			cmd = root
		}
		fmt.Fprintf(errw, "Run '%s --help' for usage.\n", cmd.CommandPath())
	}
	return code
}

// newCLILogger logs to stderr as text without timestamps: a person reads it
// right after the command ran.
func newCLILogger(w io.Writer) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if len(groups) == 0 && a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		},
	}))
}

func newRootCmd(s streams) *cobra.Command {
	o := &options{}
	root := &cobra.Command{
		Use:   "tabwarden",
		Short: "Supervise LLM agents driving a real Chromium, one keypress per consequential step",
		Long: `tabwarden is a terminal console in which you supervise LLM agents that use the
web. Agents drive a real Chromium (headed, or --headless with the page in
the terminal); every consequential step (opening an origin, reading it, each
page action, each site-tool call, sharing a result) waits for your keypress.

Run without a command to start the console.`,
		Args:          cobra.NoArgs,
		SilenceErrors: true,
		SilenceUsage:  true,
		PersistentPreRunE: func(cmd *cobra.Command, args []string) error {
			o.reviewTimeoutSet = cmd.Flags().Changed("review-timeout")
			// A flag value the console cannot honour is a malformed command
			// line like an unknown flag: its error points at --help too.
			return pointAtHelp(o.validate())
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return runConsole(cmd.Context(), o, s)
		},
	}
	root.SetIn(s.in)
	root.SetOut(s.out)
	root.SetErr(s.err)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error {
		return &exitError{code: exitUsage, err: err, usage: true}
	})

	pf := root.PersistentFlags()
	pf.StringVar(&o.consent, "consent", string(consent.ProfileStrict),
		"consent profile: strict (four gates), thread (one grant per conversation for navigation and reading) or trusted (one grant per session)")
	pf.DurationVar(&o.reviewDelay, "review-delay", consent.DefaultReviewDelay,
		"how long a review must be on screen before the a key approves it (key-ahead guard; minimum 250ms)")
	pf.DurationVar(&o.reviewTimeout, "review-timeout", consent.DefaultReviewTimeout,
		"how long a review waits for your key once on screen (and a held request in the queue); 10s to 30m")
	pf.DurationVar(&o.grantWindow, "grant-window", consent.DefaultGrantWindow,
		"how long s (allow for a while) lets one class of step run on one origin without asking; 1m to 24h, capped by policy maxGrantMinutes")
	pf.StringVar(&o.notify, "notify", string(tui.NotifyDesktop),
		"how a new review calls you: desktop (bell, and a desktop notification where the terminal shows one: OSC 9/777/99), bell, or off")
	pf.StringVar(&o.notifyCmd, "notify-command", "",
		"run CMD (through /bin/sh) when a new review waits; its environment has TABWARDEN_REVIEW_TITLE, TABWARDEN_REVIEW_KIND, TABWARDEN_CONVERSATION, TABWARDEN_ORIGIN, TABWARDEN_PENDING (never values); at most once per 10s")
	pf.StringArrayVar(&o.policies, "policy", nil,
		"managed policy file (JSON or YAML); repeat for several, they are intersected")
	pf.StringVar(&o.profile, "profile", "",
		"Chromium profile directory (default $XDG_DATA_HOME/tabwarden/profile)")
	pf.StringVar(&o.chromium, "chromium", "",
		"Chromium/Chrome executable (default $TABWARDEN_CHROMIUM, then PATH)")
	pf.BoolVar(&o.headless, "headless", false, "run Chromium headless (CI and servers without a display)")
	pf.StringVar(&o.browserURL, "browser-url", "",
		"attach to a running Chromium's DevTools endpoint, a browserless or a Selenium Grid 4 instead of launching one")
	pf.StringVar(&o.browserToken, "browser-token", "",
		"the fleet engine's token for --browser-url (default $"+browser.EnvBrowserToken+"; the variable keeps it out of ps)")
	pf.StringVar(&o.mcpListen, "mcp-listen", "", "loopback address the MCP server listens on (default: this user's stable 127.0.0.1 port, chosen once and kept in $XDG_STATE_HOME/tabwarden/mcp-port)")
	pf.DurationVar(&o.sessionIdle, "mcp-session-idle", mcpserver.DefaultSessionIdleTimeout,
		"end a stateful MCP session (its tabs go to you) after this long without a request; 0 never")
	pf.StringVar(&o.audit, "audit", "",
		"audit log file (default $XDG_STATE_HOME/tabwarden/audit-YYYY-MM-DD.jsonl)")
	pf.StringVar(&o.sshListen, "ssh-listen", "",
		"serve the console to operators over SSH on ADDR (off by default; :PORT means 127.0.0.1:PORT)")
	pf.StringVar(&o.sshKeys, "ssh-authorized-keys", "",
		"the SSH operators' public keys (authorized_keys format; each key's comment is its operator's name)")
	pf.StringVar(&o.pageView, "page-view", string(tui.PageAuto),
		"how the page view (v) draws: auto (ask each screen's terminal), halfblock, kitty, sixel or iterm2")

	root.Flags().Int64Var(&o.maxUpload, "max-upload-bytes", agent.DefaultMaxUploadBytes,
		"largest file an agent may upload (browser_upload); larger ones fail upload_too_large without a review")
	root.Flags().StringVar(&o.tools, "tools", "default",
		"tool surface agents see: default (the browser_* and webmcp_* tools) or web_use (one web_use tool with page tokens)")
	root.Flags().StringVar(&o.script, "script", "",
		"feed scripted consent requests (JSON lines) to the engine, to exercise the operator screen")
	_ = root.Flags().MarkHidden("script")

	root.AddCommand(
		newDemoCmd(o, s),
		newPolicyCmd(s),
		newAuditCmd(o, s),
		newDoctorCmd(o, s),
		newVersionCmd(s),
		newMCPStdioCmd(s),
		newConnectCmd(s),
		newTokensCmd(s),
		newRunCmd(o, s),
	)
	wireCompletion(root)
	scopeHelp(root)
	// --version says what `tabwarden version` says.
	root.Version = versionText()
	root.SetVersionTemplate("{{.Version}}")
	return root
}

// validate rejects flag values the console could not honour. It runs for
// every command so a typo in a shell alias is caught wherever it is used.
func (o *options) validate() error {
	switch consent.Profile(o.consent) {
	case consent.ProfileStrict, consent.ProfileThread, consent.ProfileTrusted:
	default:
		return badUsagef("invalid --consent '%s': use strict, thread or trusted", o.consent)
	}
	if o.reviewDelay < consent.MinReviewDelay {
		return usageErrorf("invalid --review-delay %s: the minimum is %s, so typing ahead can never approve a review",
			o.reviewDelay, consent.MinReviewDelay)
	}
	if o.reviewTimeout < consent.MinReviewTimeout || o.reviewTimeout > consent.MaxReviewTimeout {
		return usageErrorf("invalid --review-timeout %s: use %s to %s",
			o.reviewTimeout, consent.MinReviewTimeout, consent.MaxReviewTimeout)
	}
	if o.grantWindow < time.Minute || o.grantWindow > consent.MaxGrantWindow {
		return usageErrorf("invalid --grant-window %s: use 1m to 24h (managed policy may cap it further)", o.grantWindow)
	}
	if _, err := tui.ParseNotifyMode(o.notify); err != nil {
		return usageErrorf("invalid --notify '%s': %v", o.notify, err)
	}
	if agent.ProfileNamed(o.tools) == nil {
		return usageErrorf("invalid --tools '%s': use %s", o.tools, strings.Join(agent.ProfileNames(), " or "))
	}
	if _, err := tui.ParsePageProtocol(o.pageView); err != nil {
		return usageErrorf("invalid --page-view '%s': %v", o.pageView, err)
	}
	if o.maxUpload <= 0 {
		return usageErrorf("invalid --max-upload-bytes %d: use a positive number of bytes", o.maxUpload)
	}
	if o.sessionIdle < 0 {
		return usageErrorf("invalid --mcp-session-idle %s: use a positive duration, or 0 for never", o.sessionIdle)
	}
	// The server's own rule, so an address the flag accepts is one the
	// server binds (checked before any browser starts).
	if _, err := mcpserver.LoopbackAddr(o.mcpListen); o.mcpListen != "" && err != nil {
		return usageErrorf("invalid --mcp-listen '%s': %v", o.mcpListen, err)
	}
	if err := o.checkSSHFlags(); err != nil {
		return err
	}
	if o.browserToken == "" {
		o.browserToken = os.Getenv(browser.EnvBrowserToken)
	}
	if o.browserURL != "" {
		u, err := url.Parse(o.browserURL)
		if err != nil || u.Host == "" || !oneOf(u.Scheme, "http", "https", "ws", "wss") {
			return usageErrorf("invalid --browser-url '%s': use the DevTools endpoint, e.g. http://127.0.0.1:9222", browser.ShownURL(o.browserURL))
		}
	}
	return nil
}

// checkLoopbackAddr enforces design.md §3/§1: the MCP server is loopback only;
// remote hosts reach it over an ssh tunnel, never an open port.
func oneOf(s string, set ...string) bool {
	for _, v := range set {
		if s == v {
			return true
		}
	}
	return false
}
