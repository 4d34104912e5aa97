package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/spf13/cobra"

	"github.com/tabwarden/tabwarden/agent/builtin"
	"github.com/tabwarden/tabwarden/agent/llm"
	"github.com/tabwarden/tabwarden/agent/mcpserver"
	"github.com/tabwarden/tabwarden/consent"
	"github.com/tabwarden/tabwarden/consent/errcode"
)

// runOptions are `tabwarden run`'s own flags (design.md §12).
type runOptions struct {
	task      string
	setup     string
	provider  string
	baseURL   string
	model     string
	images    string
	maxSteps  int
	maxTokens int64
	stream    bool
}

func newRunCmd(o *options, s streams) *cobra.Command {
	ro := &runOptions{}
	cmd := &cobra.Command{
		Use:   `run "task"`,
		Short: "Start the console with the built-in LLM agent working on a task",
		Long: `run starts the console with the built-in agent working on the task. The agent
is supervised like any other: it reaches the browser only through the
console's own MCP tools, under its own conversation, so every review waits
for your key, x stops it and t takes the browser over. p in the console
gives it another task, run as a conversation of its own beside the first.

Providers: --provider openai talks to any OpenAI-compatible chat-completions
endpoint (--base-url: http://127.0.0.1:11434/v1 for Ollama,
http://127.0.0.1:8080/v1 for llama.cpp, http://127.0.0.1:8000/v1 for vLLM;
the key from OPENAI_API_KEY, optional with --base-url);
--provider anthropic uses ANTHROPIC_API_KEY. Named setups live in
$XDG_CONFIG_HOME/tabwarden/providers.json:

  {"setups": {"local": {"provider": "openai", "baseURL": "http://127.0.0.1:11434/v1",
                        "model": "qwen2.5vl:7b", "images": "on"}}}

and are picked with --setup NAME (flags given as well override it). Keys
are never stored in that file; "keyEnv" names the variable to read.

Screenshots are sent only to models that accept images (a built-in table;
--images on|off overrides it), in the one request after the observation,
and are never written to disk, logs or the audit.`,
		Args: func(cmd *cobra.Command, args []string) error {
			switch {
			case len(args) == 0:
				return badUsagef(`run needs a task: tabwarden run "what the agent should do" --model MODEL`)
			case len(args) > 1:
				return badUsagef(`run takes one task; quote it: tabwarden run "%s"`, strings.Join(args, " "))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			ro.task = strings.TrimSpace(args[0])
			if ro.task == "" {
				return usageErrorf("run: the task is empty")
			}
			if _, _, err := ro.llmConfig(os.Getenv); err != nil {
				return err
			}
			o.run = ro
			return runConsole(cmd.Context(), o, s)
		},
	}
	f := cmd.Flags()
	f.StringVar(&ro.setup, "setup", "", "named provider setup from $XDG_CONFIG_HOME/tabwarden/providers.json")
	f.StringVar(&ro.provider, "provider", "", "model provider: openai (any OpenAI-compatible endpoint) or anthropic (default openai)")
	f.StringVar(&ro.baseURL, "base-url", "", "provider endpoint, e.g. http://127.0.0.1:8080/v1 (default: the provider's own)")
	f.StringVar(&ro.model, "model", "", "model id")
	f.StringVar(&ro.images, "images", "", "send screenshots to the model: on or off (default: by the model's known capability)")
	f.IntVar(&ro.maxSteps, "max-steps", builtin.DefaultMaxSteps, "stop the agent after this many model turns")
	f.Int64Var(&ro.maxTokens, "max-tokens", 0, "stop the agent once it has used this many tokens (0: no budget)")
	f.BoolVar(&ro.stream, "stream", true, "stream the model's answers")
	f.Int64Var(&o.maxUpload, "max-upload-bytes", o.maxUpload, "largest file an agent may upload (browser_upload)")
	return cmd
}

// llmConfig resolves the setup, the flags and the key into the model's
// configuration; the error is a usage error.
func (ro *runOptions) llmConfig(getenv func(string) string) (llm.Config, string, error) {
	var st llm.Setup
	if ro.setup != "" {
		path := llm.SetupsFile(filepath.Join(configDir(getenv), "tabwarden"))
		setups, err := llm.LoadSetups(path)
		if err != nil {
			return llm.Config{}, "", usageErrorf("providers file: %v", err)
		}
		var ok bool
		if st, ok = setups[ro.setup]; !ok {
			if len(setups) == 0 {
				what := "has no setups"
				if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
					what = "does not exist"
				}
				return llm.Config{}, "", usageErrorf("--setup %s: %s %s (its format: tabwarden run --help)", ro.setup, path, what)
			}
			return llm.Config{}, "", usageErrorf("--setup %s: no such setup in %s (it has: %s)", ro.setup, path, strings.Join(llm.SetupNames(setups), ", "))
		}
	}
	cfg := llm.Config{
		Provider: cmp.Or(ro.provider, st.Provider, llm.ProviderOpenAI),
		BaseURL:  cmp.Or(ro.baseURL, st.BaseURL),
		Model:    cmp.Or(ro.model, st.Model),
		Images:   cmp.Or(ro.images, st.Images),
		Stream:   ro.stream,
	}
	switch cfg.Provider {
	case llm.ProviderOpenAI, llm.ProviderAnthropic:
	default:
		return cfg, "", badUsagef("invalid --provider '%s': use openai or anthropic", cfg.Provider)
	}
	if cfg.Model == "" {
		return cfg, "", badUsagef("run: no model: pass --model (or --setup)")
	}
	if cfg.Images != "" && cfg.Images != "on" && cfg.Images != "off" {
		return cfg, "", badUsagef("invalid --images '%s': use on or off", cfg.Images)
	}
	if ro.maxSteps <= 0 || ro.maxTokens < 0 {
		return cfg, "", badUsagef("run: --max-steps must be positive and --max-tokens not negative")
	}
	keyEnv := cmp.Or(st.KeyEnv, llm.KeyEnv(cfg.Provider))
	cfg.APIKey = getenv(keyEnv)
	if cfg.APIKey == "" {
		if cfg.BaseURL == "" {
			return cfg, "", usageErrorf("run: %s is not set (the %s provider needs a key)", keyEnv, cfg.Provider)
		}
		// Local servers (llama.cpp, vLLM, Ollama) take any key or none;
		// the SDK wants one to send.
		cfg.APIKey = "none"
	}
	return cfg, keyEnv, nil
}

func configDir(getenv func(string) string) string {
	if d := getenv("XDG_CONFIG_HOME"); d != "" {
		return d
	}
	if d, err := os.UserConfigDir(); err == nil {
		return d
	}
	return filepath.Join(getenv("HOME"), ".config")
}

// builtinRun is one built-in agent running in the console.
type builtinRun struct {
	// name is its token's name, the first part of its conversation's
	// name on the screen: builtin, builtin-2, …
	name   string
	number int // n of builtinName(n)
	cancel context.CancelFunc
	done   chan struct{}
}

func (b *builtinRun) stop() {
	b.cancel()
	<-b.done
}

// builtinAgents are the console's built-in agents on one model: the task
// `tabwarden run` was given and each task the operator gives with p, every
// one its own conversation under its own in-memory token.
type builtinAgents struct {
	ctx   context.Context
	model llm.Model
	cfg   builtin.Config
	eng   *consent.Engine
	srv   *mcpserver.Server

	mu   sync.Mutex
	runs []*builtinRun
	// tasks counts the tasks started, so the n-th task is builtin-n even
	// when the earlier ones have ended and their names are free again:
	// the operator tells tasks apart by the number the README promises.
	tasks  int
	closed bool
}

// startBuiltin makes the model of ro's provider settings and starts the
// built-in agent on ro.task. The returned agents take more tasks (start,
// the TUI's p) until stop.
func startBuiltin(ctx context.Context, ro *runOptions, eng *consent.Engine, srv *mcpserver.Server) (*builtinAgents, error) {
	cfg, _, err := ro.llmConfig(os.Getenv)
	if err != nil {
		return nil, err
	}
	model, err := llm.New(ctx, cfg)
	if err != nil {
		return nil, failure(err)
	}
	a := newBuiltinAgents(ctx, model, builtin.Config{MaxSteps: ro.maxSteps, MaxTokens: ro.maxTokens}, eng, srv)
	if err := a.start(ro.task); err != nil {
		a.stop()
		return nil, failure(err)
	}
	return a, nil
}

func newBuiltinAgents(ctx context.Context, model llm.Model, bc builtin.Config, eng *consent.Engine, srv *mcpserver.Server) *builtinAgents {
	return &builtinAgents{ctx: ctx, model: model, cfg: bc, eng: eng, srv: srv}
}

// start runs a new built-in agent conversation on task. Its error carries
// a design.md §5 code (the TUI shows it) and is noted in the activity log.
func (a *builtinAgents) start(task string) error {
	err := a.startRun(task)
	if err != nil {
		a.eng.Note("", "built-in agent not started: "+err.Error(), true)
	}
	return err
}

func (a *builtinAgents) startRun(task string) error {
	task = strings.TrimSpace(task)
	if task == "" {
		return errcode.Errorf(errcode.InvalidInput, errcode.NextNone, "the task is empty")
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed || a.ctx.Err() != nil {
		return errcode.Errorf(errcode.BrowserUnavailable, errcode.NextNone, "the console is shutting down")
	}
	b, err := startBuiltinWith(a.ctx, a.model, a.cfg, task, a.eng, a.srv, a.tasks+1)
	if errors.Is(err, mcpserver.ErrClosed) {
		return errcode.Errorf(errcode.BrowserUnavailable, errcode.NextNone, "the console's MCP server is closed")
	}
	if err != nil {
		return errcode.Errorf(errcode.BrowserOperationFailed, errcode.NextNone, "%v", err)
	}
	a.tasks = b.number
	// Forget the runs that ended.
	a.runs = slices.DeleteFunc(a.runs, func(r *builtinRun) bool {
		select {
		case <-r.done:
			return true
		default:
			return false
		}
	})
	a.runs = append(a.runs, b)
	return nil
}

// stop stops every built-in agent and waits for them; later starts fail.
func (a *builtinAgents) stop() {
	a.mu.Lock()
	a.closed = true
	runs := a.runs
	a.runs = nil
	a.mu.Unlock()
	for _, r := range runs {
		r.stop()
	}
}

// builtinName is the token name of the console's n-th built-in task.
func builtinName(n int) string {
	if n <= 1 {
		return "builtin"
	}
	return "builtin-" + strconv.Itoa(n)
}

// startBuiltinWith connects one built-in agent to the console's MCP server
// over an in-memory transport, under a token of its own (builtinName(n),
// or the next free number when an operator's token holds that name), and
// starts it on task. Its progress goes to the activity log; `x` on its
// conversation stops it.
func startBuiltinWith(ctx context.Context, model llm.Model, bc builtin.Config, task string, eng *consent.Engine, srv *mcpserver.Server, n int) (*builtinRun, error) {
	var im *mcpserver.InMemory
	var err error
	n = max(n, 1)
	for ; ; n++ {
		im, err = srv.ConnectInMemory(ctx, builtinName(n), "built-in agent "+model.Name())
		if !errors.Is(err, mcpserver.ErrTokenExists) {
			break
		}
	}
	if err != nil {
		return nil, fmt.Errorf("built-in agent: %w", err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	b := &builtinRun{name: builtinName(n), number: n, cancel: cancel, done: make(chan struct{})}

	// The conversation exists from the agent's first tool call; the
	// listener runs under the engine's lock, so it reads an atomic only.
	var conv atomic.Value // consent.ConversationID
	conv.Store(consent.ConversationID(""))
	convOf := func() consent.ConversationID {
		c := conv.Load().(consent.ConversationID)
		if c == "" {
			if c = im.Conversation(); c != "" {
				conv.Store(c)
			}
		}
		return c
	}
	unlisten := eng.Listen(func(ev consent.Event) {
		if ev.Kind == consent.EventCancel && ev.Conversation != "" && ev.Conversation == conv.Load().(consent.ConversationID) {
			cancel()
		}
	})

	bc.Model, bc.Session = model, im.Session
	var mu sync.Mutex
	var lastMsg string
	bc.Report = func(s builtin.Status) {
		c := convOf()
		mu.Lock()
		defer mu.Unlock()
		if s.Message != "" && s.Message != lastMsg {
			lastMsg = s.Message
			// Model text is untrusted: one line, cleaned again by the TUI.
			eng.Note(c, "model says (untrusted): "+s.Message, false)
		}
		if s.Tool != "" {
			line := fmt.Sprintf("step %d · %s · %s", s.Step, s.Tool, usageText(s))
			if c != "" {
				eng.Note(c, line, false)
			} else {
				// The first call is reported before it registers the
				// conversation; its line waits for it, as every later step
				// is the conversation's too.
				go noteWhenRegistered(runCtx, eng, convOf, line)
			}
		}
	}
	bc.WaitResume = func(ctx context.Context) error {
		ch, stop := eng.Changes()
		defer stop()
		for eng.Paused(convOf()) {
			select {
			case <-ch:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		return nil
	}
	eng.Note("", "built-in agent "+b.name+" ("+model.Name()+") starting on: "+builtin.OneLine(task, 200), false)
	go func() {
		defer close(b.done)
		defer unlisten()
		out := builtin.Run(runCtx, bc, task)
		c := convOf()
		after := "after " + plural(out.Steps, "step")
		if out.Steps == 0 {
			after = "before its first step"
		}
		msg := fmt.Sprintf("built-in agent %s stopped %s: %s (%s)", b.name, after, out.Reason, usageText(builtin.Status{Tokens: out.Usage.Total()}))
		eng.Note(c, msg, out.Err != nil)
		slog.Info("built-in agent stopped", "reason", out.Reason, "steps", out.Steps, "tokens", out.Usage.Total())
		if err := im.Close(); err != nil {
			slog.Warn("built-in agent: close", "err", err)
		}
	}()
	return b, nil
}

func usageText(s builtin.Status) string {
	t := fmt.Sprintf("%d tokens", s.Tokens)
	if s.CostKnown {
		t += fmt.Sprintf(", ~$%.4f", s.Cost)
	}
	return t
}

// plural is "1 step", "2 steps".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}

// noteWhenRegistered writes line under the conversation convOf returns as
// soon as it exists, or drops it when ctx ends first (the call never ran).
func noteWhenRegistered(ctx context.Context, eng *consent.Engine, convOf func() consent.ConversationID, line string) {
	ch, stop := eng.Changes()
	defer stop()
	for {
		if c := convOf(); c != "" {
			eng.Note(c, line, false)
			return
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return
		}
	}
}
