package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/tabwarden/tabwarden/browser"
	"github.com/tabwarden/tabwarden/consent"
	"github.com/tabwarden/tabwarden/consent/audit"
	"github.com/tabwarden/tabwarden/consent/errcode"
	"github.com/tabwarden/tabwarden/policy"
)

// Browser is the part of the browser engine the dispatch drives. *browser.Browser
// satisfies it; tests may substitute nothing else, since every gate must be
// proven against a real Chromium.
type Browser interface {
	NewTab(ctx context.Context, conv consent.ConversationID, background bool) (consent.TabID, error)
	Navigate(ctx context.Context, conv consent.ConversationID, id consent.TabID, rawURL string) error
	History(ctx context.Context, conv consent.ConversationID, id consent.TabID, action string) error
	Tab(id consent.TabID) (consent.TabInfo, error)
	// CloseTab closes a tab conv owns: tab_closed when it is gone already,
	// wrong_conversation when another conversation or the operator owns it.
	CloseTab(ctx context.Context, conv consent.ConversationID, id consent.TabID) error
	// Handle is the tab-level verbs of a tab conv owns (observe, act,
	// verify, upload, viewport, site tools); the browser owns the tab's
	// state behind it and ends it when the tab goes.
	Handle(ctx context.Context, conv consent.ConversationID, id consent.TabID) (*browser.Handle, error)
	// Available is nil while Chromium runs; after a crash it starts the
	// relaunch and answers browser_unavailable until the new one is up.
	Available() error
}

// Dispatcher is the router of the tool surface: it looks each call's tool
// up among its tools and runs it under the conversation, the consent
// engine and the browser. It is the one implementation of Surface; the
// MCP server, the demo agent and tests all go through it.
type Dispatcher struct {
	engine  *consent.Engine
	browser Browser
	policy  *policy.Policy
	audit   audit.Sink
	now     func() time.Time
	tools   map[string]*Tool
	// maxUpload bounds browser_upload's decoded size (tool_upload.go).
	maxUpload int64
	jobs      *jobs   // browser_batch jobs (tool_batch.go)
	web       *webUse // web_use tokens and sessions (tool_webuse.go)
	calls     inflight
}

// DispatcherConfig configures a Dispatcher. Engine and Browser are required.
type DispatcherConfig struct {
	Engine  *consent.Engine
	Browser Browser
	Policy  *policy.Policy
	Audit   audit.Sink
	// MaxUploadBytes bounds browser_upload (--max-upload-bytes); zero:
	// DefaultMaxUploadBytes. Larger files fail upload_too_large unreviewed.
	MaxUploadBytes int64
	// Tools are the tools the dispatch runs. Nil: every tool of every
	// profile in Profiles, so any transport's choice of profile (and the
	// built-in and demo agents, which speak the default one) is served.
	Tools []*Tool
}

// NewDispatcher returns the dispatch over cfg.
func NewDispatcher(cfg DispatcherConfig) *Dispatcher {
	d := &Dispatcher{engine: cfg.Engine, browser: cfg.Browser, policy: cfg.Policy, audit: cfg.Audit, now: time.Now}
	d.maxUpload = cfg.MaxUploadBytes
	d.jobs = newJobs()
	d.web = newWebUse()
	d.tools = map[string]*Tool{}
	tools := cfg.Tools
	if tools == nil {
		for _, p := range Profiles {
			tools = append(tools, p.Tools...)
		}
	}
	for _, t := range tools {
		d.tools[t.Name] = t
	}
	return d
}

// Close stops every batch job, waiting for its goroutine. It leaves
// calls alone: Shutdown (which the MCP server's Close runs first) is
// what withdraws them.
func (d *Dispatcher) Close() {
	d.jobs.close()
}

var _ Surface = (*Dispatcher)(nil)

// Call runs one tool for conv. It never panics on bad input: every failure
// is an envelope with its design.md §5 code, and one audit record is written per call.
func (d *Dispatcher) Call(ctx context.Context, conv consent.ConversationID, name string, args json.RawMessage) Result {
	start := d.now()
	ctx, end := d.calls.begin(ctx)
	defer end()
	var res Result
	var tab consent.TabID
	tool := d.tools[name]
	shutdown := context.Cause(ctx) == ErrShuttingDown
	if shutdown {
		res = fail(withdrawn(nil))
	} else {
		res, tab = d.call(ctx, conv, tool, name, args)
		res, shutdown = shutdownResult(ctx, res)
	}
	if tool != nil {
		res = tool.Answer(res)
	}
	d.record(conv, name, tab, args, res, shutdown, d.now().Sub(start))
	return res
}

// call runs tool (nil: no tool is called name) after the checks every
// call passes.
func (d *Dispatcher) call(ctx context.Context, conv consent.ConversationID, tool *Tool, name string, args json.RawMessage) (Result, consent.TabID) {
	if conv == "" {
		return fail(errcode.Errorf(errcode.MissingSession, errcode.NextListTabs, "this call carries no conversation identity")), ""
	}
	if tool == nil {
		return fail(errcode.Errorf(errcode.InvalidAction, errcode.NextListTabs, "unknown tool %q", name)), ""
	}
	// After a crash every old tab is gone; the agent must hear that the
	// browser is coming back, not that its tab closed.
	if !tool.AwaitsBrowser {
		if err := d.browser.Available(); err != nil {
			return fail(err), ""
		}
	}
	if !tool.DuringJob {
		// A frozen conversation's agent lost a batch's answer (tool_batch.go).
		// Checked before job_pending: "a job runs" must not read as the
		// answer it lost while the operator has not looked yet.
		if id := d.jobs.lostAnswer(conv); id != "" {
			_ = d.engine.Freeze(conv, id) // fails only for an ended conversation
		}
		if err := d.engine.Frozen(conv); err != nil {
			return fail(err), ""
		}
		if err := d.jobs.pending(conv); err != nil {
			return fail(err), ""
		}
	}
	return tool.run(d, ctx, conv, args)
}

// record writes the one audit record of a tool call: never values, only the
// redacted input summary, sizes and the outcome code.
func (d *Dispatcher) record(conv consent.ConversationID, tool string, tab consent.TabID, args json.RawMessage, res Result, shutdown bool, took time.Duration) {
	if d.audit == nil {
		return
	}
	rec := audit.Record{
		Time: d.now(), Kind: audit.KindToolCall, Conversation: string(conv), Tab: string(tab),
		Tool: tool, Input: audit.Summarize(args), Code: res.Code(), WaitMS: took.Milliseconds(),
	}
	if res.IsError {
		rec.Decision = "failed"
	} else {
		rec.Decision = "ok"
	}
	// The outcome the agent was told, in words the audit reader needs:
	// whether input reached the page and whether shutdown ended the call.
	changed, _ := res.Object["mayHaveChangedState"].(bool)
	switch {
	case shutdown && changed:
		rec.Note = "withdrawn by shutdown after dispatch: may have changed state"
	case shutdown:
		rec.Note = "withdrawn by shutdown: nothing dispatched"
	case res.IsError && changed:
		rec.Note = "dispatched: may have changed state"
	}
	if err := d.audit.Write(rec); err != nil {
		d.engine.Note(conv, fmt.Sprintf("audit write failed for %s: %v", tool, err), true)
	}
}
