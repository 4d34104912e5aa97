package webmcp

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"time"

	"github.com/go-rod/rod/lib/proto"

	"github.com/tabwarden/tabwarden/browser/cdpedge"
	"github.com/tabwarden/tabwarden/consent"
	"github.com/tabwarden/tabwarden/consent/audit"
	"github.com/tabwarden/tabwarden/consent/errcode"
)

// Options tune a Broker. Zero values take the design.md defaults.
type Options struct {
	// ExecTimeout bounds one tool execution in the page (default 60 s);
	// when it passes the call is cancelled in the page and fails
	// execution_timeout.
	ExecTimeout time.Duration
	// MaxConcurrent is the number of executions a tab may run at once
	// (default 4); one more fails too_many_requests before dispatch.
	MaxConcurrent int
}

// Broker owns the site tools of every attached tab: it lists them through
// the sanitizer, hands out opaque toolIds, resolves them back with the
// stale/foreign checks, and runs calls under the quotas. It asks no
// questions: the caller gates each call through consent between Prepare and
// Invoke, and the result between Invoke and delivery.
type Broker struct {
	opts Options

	mu      sync.Mutex
	tabs    map[consent.TabID]*brokerTab
	handles map[string]*handle
}

type brokerTab struct {
	conv    consent.ConversationID
	site    *Site
	running map[*Call]context.CancelCauseFunc
}

// handle is what a toolId stands for.
type handle struct {
	id     string
	conv   consent.ConversationID
	tab    consent.TabID
	rev    uint64
	frame  proto.PageFrameID
	gen    uint64
	name   string
	digest string
	tool   *Tool
}

// NewBroker returns an empty Broker.
func NewBroker(opts Options) *Broker {
	if opts.ExecTimeout <= 0 {
		opts.ExecTimeout = cdpedge.SiteExec
	}
	if opts.MaxConcurrent <= 0 {
		opts.MaxConcurrent = 4
	}
	return &Broker{opts: opts, tabs: map[consent.TabID]*brokerTab{}, handles: map[string]*handle{}}
}

// AddTab puts an attached Site under the broker, owned by conv.
func (b *Broker) AddTab(conv consent.ConversationID, tab consent.TabID, s *Site) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.tabs[tab] = &brokerTab{conv: conv, site: s, running: map[*Call]context.CancelCauseFunc{}}
}

// RemoveTab forgets a tab: its handles go stale, running calls are
// cancelled in the page, and its Site is closed.
func (b *Broker) RemoveTab(tab consent.TabID) {
	b.mu.Lock()
	t := b.tabs[tab]
	delete(b.tabs, tab)
	b.dropHandlesLocked(tab)
	var cancels []context.CancelCauseFunc
	if t != nil {
		// Copied under the lock: a finishing call deletes itself from
		// running under it.
		for _, cancel := range t.running {
			cancels = append(cancels, cancel)
		}
	}
	b.mu.Unlock()
	for _, cancel := range cancels {
		cancel(errCanceled)
	}
	if t != nil {
		t.site.Close()
	}
}

// CancelConversation cancels every running call of conv in the page; the
// calls fail canceled. Take-over and the operator's cancel use it.
func (b *Broker) CancelConversation(conv consent.ConversationID) {
	b.mu.Lock()
	var cancels []context.CancelCauseFunc
	for _, t := range b.tabs {
		if t.conv == conv {
			for _, c := range t.running {
				cancels = append(cancels, c)
			}
		}
	}
	b.mu.Unlock()
	for _, c := range cancels {
		c(errCanceled)
	}
}

func (b *Broker) dropHandlesLocked(tab consent.TabID) {
	for id, h := range b.handles {
		if h.tab == tab {
			delete(b.handles, id)
		}
	}
}

// ListedTool is one entry of webmcp_list_tools' tools (design.md §5). Every
// string in it is site content.
type ListedTool struct {
	ToolID      string          `json:"toolId"`
	Name        string          `json:"name"`
	Title       string          `json:"title,omitempty"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"inputSchema"`
	Annotations Annotations     `json:"annotations"`
	Origin      string          `json:"origin"`
}

// Support says how the tab's tools are served.
type Support struct {
	Mode Mode `json:"mode"`
}

// Listing is the body of webmcp_list_tools. RejectedTools is never nil so
// it serializes as [].
type Listing struct {
	Tools         []ListedTool `json:"tools"`
	RejectedTools []Rejected   `json:"rejectedTools"`
	Support       Support      `json:"support"`
}

func (b *Broker) tab(conv consent.ConversationID, tab consent.TabID) (*brokerTab, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	t, ok := b.tabs[tab]
	if !ok {
		return nil, errcode.Errorf(errcode.TabClosed, errcode.NextListTabs, "the tab has no site-tool connection")
	}
	if t.conv != conv {
		return nil, errcode.Errorf(errcode.WrongConversation, errcode.NextListTabs, "the tab belongs to another conversation")
	}
	return t, nil
}

// List discovers, sanitizes and lists the tab's site tools, minting one
// toolId per listed tool. The tab's earlier toolIds that are not in this
// listing are forgotten; a tool listed again under the same identity keeps
// its toolId. The caller has already passed the read gate for the origin.
func (b *Broker) List(ctx context.Context, conv consent.ConversationID, tab consent.TabID) (*Listing, error) {
	t, err := b.tab(conv, tab)
	if err != nil {
		return nil, err
	}
	l, err := t.site.list(ctx)
	if err != nil {
		return nil, cdpedge.Silent(ctx, "list site tools", err)
	}
	tools, rejected := SanitizeAll(l.descs)
	out := &Listing{Tools: []ListedTool{}, RejectedTools: append(l.broken, rejected...), Support: Support{Mode: t.site.Mode()}}
	if out.RejectedTools == nil {
		out.RejectedTools = []Rejected{}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.tabs[tab] != t {
		return nil, errcode.Errorf(errcode.TabClosed, errcode.NextListTabs, "the tab closed while its site tools were listed")
	}
	old := map[handleKey]*handle{}
	for id, h := range b.handles {
		if h.tab == tab {
			old[h.key()] = h
			delete(b.handles, id)
		}
	}
	for _, tl := range tools {
		h := &handle{conv: conv, tab: tab, rev: l.rev, frame: proto.PageFrameID(tl.Frame), gen: l.gens[proto.PageFrameID(tl.Frame)],
			name: tl.Name, digest: tl.Digest, tool: tl}
		if prev, ok := old[h.key()]; ok {
			h.id = prev.id
		} else {
			h.id = "wt_" + randomID()
		}
		b.handles[h.id] = h
		out.Tools = append(out.Tools, ListedTool{ToolID: h.id, Name: tl.Name, Title: tl.Title, Description: tl.Description,
			InputSchema: tl.InputSchema, Annotations: tl.Annotations, Origin: tl.Origin})
	}
	return out, nil
}

// handleKey is a listed tool's identity: the same key in the next listing
// keeps the toolId.
type handleKey struct {
	frame    proto.PageFrameID
	name     string
	digest   string
	rev, gen uint64
}

func (h *handle) key() handleKey {
	return handleKey{h.frame, h.name, h.digest, h.rev, h.gen}
}

// Call is one prepared site-tool call: the handle resolved, the input
// validated. Use it once: ToolCall for the "Allow once" review, Fresh as
// the review's Recheck, Invoke, then Disclosure for "Share result".
type Call struct {
	b     *Broker
	h     *handle
	Tab   consent.TabID
	Tool  Tool
	Input json.RawMessage // canonical, validated; never logged

	once sync.Once
}

// Prepare resolves toolID for conv (wrong_conversation for a foreign
// handle, stale_tool for one whose page, frame or descriptor changed) and
// validates input against the tool's accepted schema (invalid_input). It
// runs before any review. tab may be empty (the handle names its tab);
// a non-empty tab must be the handle's.
func (b *Broker) Prepare(ctx context.Context, conv consent.ConversationID, tab consent.TabID, toolID string, input json.RawMessage) (*Call, error) {
	b.mu.Lock()
	h, ok := b.handles[toolID]
	b.mu.Unlock()
	if !ok {
		return nil, staleTool("unknown or outdated toolId; list the site tools again")
	}
	if h.conv != conv {
		return nil, errcode.Errorf(errcode.WrongConversation, errcode.NextNone, "the toolId belongs to another conversation")
	}
	if tab != "" && tab != h.tab {
		return nil, staleTool("the toolId belongs to another tab")
	}
	c := &Call{b: b, h: h, Tab: h.tab, Tool: *h.tool}
	if err := c.fresh(ctx); err != nil {
		return nil, err
	}
	in, err := ValidateInput(h.tool, input)
	if err != nil {
		return nil, err
	}
	c.Input = in
	return c, nil
}

// ToolCall is the review detail for the action gate: the input's values for
// the screen, secret-looking keys masked, and its redacted shape for the log.
func (c *Call) ToolCall() *consent.ToolCall {
	return &consent.ToolCall{ToolName: c.Tool.Name, ToolTitle: c.Tool.Title, InputSummary: audit.Summarize(c.Input),
		InputValues:  audit.MaskSecrets(c.Input),
		ReadOnlyHint: c.Tool.Annotations.ReadOnlyHint}
}

// Fresh re-checks the handle (for consent's Recheck after approval): the
// tab, document revision, frame and descriptor must be unchanged.
func (c *Call) Fresh() error {
	ctx, cancel := context.WithTimeout(context.Background(), cdpedge.Call)
	defer cancel()
	return c.fresh(ctx)
}

func (c *Call) fresh(ctx context.Context) error {
	h := c.h
	c.b.mu.Lock()
	t, ok := c.b.tabs[h.tab]
	_, known := c.b.handles[h.id]
	c.b.mu.Unlock()
	if !ok {
		return errcode.Errorf(errcode.TabClosed, errcode.NextListTabs, "the tab of this site tool is gone")
	}
	if !known {
		return staleTool("the tool list changed; list the site tools again")
	}
	s := t.site
	s.mu.Lock()
	rev, gen := s.rev, s.frameGen[h.frame]
	s.mu.Unlock()
	if rev != h.rev {
		return staleTool("the page navigated since the tools were listed")
	}
	if gen != h.gen {
		return staleTool("the tool's frame navigated or went away")
	}
	ds, err := s.frameDescriptors(ctx, frameInfo{id: h.frame, origin: h.tool.Origin})
	if err != nil {
		return staleTool("the tool's frame cannot be reached")
	}
	for _, d := range ds {
		if d.Name != h.name {
			continue
		}
		tl, rej := Sanitize(d)
		if rej != nil || tl.Digest != h.digest {
			return staleTool("the site changed the tool's descriptor")
		}
		return nil
	}
	return staleTool("the site unregistered the tool")
}

func staleTool(msg string) error {
	return errcode.Errorf(errcode.StaleTool, errcode.NextNone, "%s", msg)
}

var (
	errCanceled    = errors.New("site-tool call canceled")
	errExecTimeout = errors.New("site-tool execution timed out")
)

// Invoke runs the call in the page once: it takes one of the tab's
// concurrent slots (too_many_requests when none is free), re-checks the
// handle, and waits for the tool under ExecTimeout. ctx is the operation's
// context: its end, RemoveTab or CancelConversation cancel the call in the
// page. The result is checked (result_too_large, invalid_result) and
// returned compact; it must go through the disclosure gate before it
// reaches anyone.
func (c *Call) Invoke(ctx context.Context) (json.RawMessage, error) {
	used := true
	c.once.Do(func() { used = false })
	if used {
		return nil, errcode.Errorf(errcode.InvalidAction, errcode.NextNone, "a prepared site-tool call runs once")
	}
	b := c.b
	ectx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	b.mu.Lock()
	t, ok := b.tabs[c.Tab]
	if ok && len(t.running) >= b.opts.MaxConcurrent {
		b.mu.Unlock()
		return nil, errcode.Errorf(errcode.TooManyRequests, errcode.NextNone,
			"the tab already runs %d site-tool calls", b.opts.MaxConcurrent)
	}
	if ok {
		t.running[c] = cancel
	}
	b.mu.Unlock()
	if !ok {
		return nil, errcode.Errorf(errcode.TabClosed, errcode.NextListTabs, "the tab of this site tool is gone")
	}
	defer func() {
		b.mu.Lock()
		delete(t.running, c)
		b.mu.Unlock()
	}()
	if err := c.fresh(ectx); err != nil {
		return nil, err
	}
	tctx, tcancel := context.WithTimeoutCause(ectx, b.opts.ExecTimeout, errExecTimeout)
	defer tcancel()
	raw, err := t.site.invoke(tctx, c.h.frame, c.h.name, c.Input)
	if err != nil {
		return nil, invokeError(tctx, err)
	}
	return CheckResult(raw)
}

// invokeError is the error of an invocation that failed once it was sent
// to the page: the tool may have run, so every answer is dispatched. The
// browser's own words stay out: they may carry the site's.
func invokeError(ctx context.Context, err error) error {
	switch {
	case errors.Is(context.Cause(ctx), errExecTimeout):
		err = errcode.Errorf(errcode.ExecutionTimeout, errcode.NextNone, "the site tool did not finish in time and was canceled in the page")
	case ctx.Err() == nil && errors.Is(err, errToolFailed):
		err = errcode.Errorf(errcode.BrowserOperationFailed, errcode.NextNone, "the site tool reported an error")
	default:
		err = cdpedge.Silent(ctx, "the site-tool call", err)
	}
	return cdpedge.Dispatched(err)
}

// Disclosure is the review detail for the "Share result" gate.
func (c *Call) Disclosure(result json.RawMessage) *consent.Disclosure {
	size, sum := audit.Digest(result)
	return &consent.Disclosure{ToolName: c.Tool.Name, Result: string(result), Size: int(size), SHA256: sum}
}
