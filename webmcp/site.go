package webmcp

import (
	"context"
	"crypto/rand"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"strings"
	"sync"

	"github.com/go-rod/rod"
	"github.com/go-rod/rod/lib/proto"
	"github.com/ysmood/gson"

	"github.com/tabwarden/tabwarden/consent"
)

//go:embed polyfill.js
var polyfillJS string

// Mode says which implementation serves a tab's site tools.
type Mode string

const (
	// ModeAuto asks the browser whether it has native WebMCP.
	ModeAuto     Mode = ""
	ModeNative   Mode = "native"
	ModePolyfill Mode = "polyfill"
)

// Site is one tab's site-tool connection: it follows frames and
// registrations and invokes tools. It never decides anything: eligibility
// and sanitizing happen on every listing, consent is the caller's.
type Site struct {
	p    caller
	main proto.TargetSessionID
	mode Mode // set once in attach, before any child session exists

	ctx    context.Context
	cancel context.CancelFunc
	pumped chan struct{}

	mu       sync.Mutex
	rev      uint64                             // bumped by each main-frame document
	frameGen map[proto.PageFrameID]uint64       // bumped when a frame's document goes
	native   map[proto.PageFrameID][]WebMCPTool // registration order
	contexts map[proto.PageFrameID]frameContext
	// Out-of-process frames: their sessions (child → the frame at its
	// root) and, for every frame found in one, the session that serves it.
	children     map[proto.TargetSessionID]proto.PageFrameID
	frameSession map[proto.PageFrameID]proto.TargetSessionID
	ppNone       map[proto.PageFrameID]bool                           // polyfill: document sent Permissions-Policy tools=()
	scripts      map[proto.TargetSessionID]proto.PageScriptIdentifier // polyfill, per session ("" = the page's)
	waiters      map[string]chan WebMCPToolResponded
	early        map[string]WebMCPToolResponded
}

// Attach connects to a tab. Call it before the tab navigates to the site
// (the polyfill is installed for new documents); the current document also
// gets it. ctx bounds the attach calls only; the Site lives until Close.
func Attach(ctx context.Context, p Page, mode Mode) (*Site, error) {
	sctx, cancel := context.WithCancel(context.Background())
	var events <-chan *rod.Message
	if rp, ok := p.(*rod.Page); ok {
		// The browser-wide stream: out-of-process frames speak on child
		// sessions that the page's own stream filters out; apply keeps only
		// the page's session and its children. Subscribed under the Site's
		// context so Close ends rod's forwarder and its buffer too.
		events = rp.Browser().Context(sctx).Event()
	} else {
		events = p.Event()
	}
	return attach(ctx, p, fromRod(sctx, events), mode, sctx, cancel)
}

func attach(ctx context.Context, p caller, events <-chan cdpEvent, mode Mode, sctx context.Context, cancel context.CancelFunc) (*Site, error) {
	s := &Site{
		p: p, main: p.GetSessionID(), ctx: sctx, cancel: cancel, pumped: make(chan struct{}),
		frameGen: map[proto.PageFrameID]uint64{}, native: map[proto.PageFrameID][]WebMCPTool{},
		contexts: map[proto.PageFrameID]frameContext{}, ppNone: map[proto.PageFrameID]bool{},
		children: map[proto.TargetSessionID]proto.PageFrameID{}, frameSession: map[proto.PageFrameID]proto.TargetSessionID{},
		scripts: map[proto.TargetSessionID]proto.PageScriptIdentifier{},
		waiters: map[string]chan WebMCPToolResponded{}, early: map[string]WebMCPToolResponded{},
	}
	go s.pump(events)
	fail := func(what string, err error) (*Site, error) {
		s.Close()
		return nil, &consent.Error{Code: consent.CodeBrowserOperationFailed, Message: fmt.Sprintf("site tools: %s: %v", what, err)}
	}
	c, done := s.sess(ctx, "")
	defer done()
	// Detection needs no domain enabled; enableSession turns Page on once
	// the mode is known.
	if mode == ModeAuto {
		native, err := detectNative(c)
		if err != nil {
			return fail("detect WebMCP", err)
		}
		mode = ModePolyfill
		if native {
			mode = ModeNative
		}
	}
	s.mu.Lock()
	s.mode = mode
	s.mu.Unlock()
	if mode != ModeNative && mode != ModePolyfill {
		return fail("mode", fmt.Errorf("unknown mode %q", mode))
	}
	if err := s.enableSession(c); err != nil {
		return fail("enable site tools", err)
	}
	return s, nil
}

// enableSession turns on what the mode needs in one session (the page's or
// an out-of-process frame's) and asks for that session's own
// out-of-process frames, paused at start so the polyfill is in place
// before their first script.
func (s *Site) enableSession(c session) error {
	if err := (proto.PageEnable{}).Call(c); err != nil {
		return fmt.Errorf("Page.enable: %w", err)
	}
	switch s.mode {
	case ModeNative:
		if err := (WebMCPEnable{}).Call(c); err != nil {
			return fmt.Errorf("WebMCP.enable: %w", err)
		}
	case ModePolyfill:
		if err := (proto.RuntimeEnable{}).Call(c); err != nil {
			return fmt.Errorf("Runtime.enable: %w", err)
		}
		if err := (proto.NetworkEnable{}).Call(c); err != nil {
			return fmt.Errorf("Network.enable: %w", err)
		}
		r, err := (proto.PageAddScriptToEvaluateOnNewDocument{Source: polyfillJS, RunImmediately: true}).Call(c)
		if err != nil {
			return fmt.Errorf("install polyfill: %w", err)
		}
		s.mu.Lock()
		s.scripts[c.sid] = r.Identifier
		s.mu.Unlock()
	}
	err := proto.TargetSetAutoAttach{AutoAttach: true, WaitForDebuggerOnStart: true, Flatten: true,
		Filter: proto.TargetTargetFilter{{Type: "iframe"}, {Exclude: true}}}.Call(c)
	if err != nil {
		return fmt.Errorf("Target.setAutoAttach: %w", err)
	}
	return nil
}

// setupChild prepares an out-of-process frame's session. It runs on its
// own goroutine (never in the pump) and always lets the frame run, even
// when setup fails: a frame left paused would hang the page.
func (s *Site) setupChild(sid proto.TargetSessionID) {
	c, done := s.sess(s.ctx, sid)
	defer done()
	_ = s.enableSession(c)
	// Not under s.ctx: a Site closing mid-setup must still let the frame run.
	r, rdone := s.sess(context.Background(), sid)
	defer rdone()
	_ = proto.RuntimeRunIfWaitingForDebugger{}.Call(r)
}

// sessionFor is the session that serves frame.
func (s *Site) sessionFor(frame proto.PageFrameID) proto.TargetSessionID {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.frameSession[frame]
}

// Mode reports the implementation in use.
func (s *Site) Mode() Mode { return s.mode }

// Close stops following the tab. Invocations in flight end with canceled.
// It turns auto-attach off again, so no frame the tab opens later waits
// for a debugger that is gone, and removes the polyfill from future
// documents (one already loaded keeps its inert copy).
func (s *Site) Close() {
	s.cancel()
	s.mu.Lock()
	sids := []proto.TargetSessionID{""}
	for sid := range s.children {
		sids = append(sids, sid)
	}
	scripts := maps.Clone(s.scripts)
	s.mu.Unlock()
	for _, sid := range sids {
		c, done := s.sess(context.Background(), sid)
		_ = proto.TargetSetAutoAttach{AutoAttach: false, WaitForDebuggerOnStart: false, Flatten: true}.Call(c)
		if id, ok := scripts[sid]; ok {
			_ = proto.PageRemoveScriptToEvaluateOnNewDocument{Identifier: id}.Call(c)
			_ = proto.RuntimeReleaseObjectGroup{ObjectGroup: bridgeGroup}.Call(c)
		}
		done()
	}
}

// sess is one CDP call's session: sid's ("" for the page's own), bounded
// by cdpTimeout under ctx.
func (s *Site) sess(ctx context.Context, sid proto.TargetSessionID) (session, context.CancelFunc) {
	c, cancel := context.WithTimeout(ctx, cdpTimeout)
	return session{p: s.p, ctx: c, sid: sid}, cancel
}

// detectNative asks the browser, not the page, whether WebMCP is built in:
// the "tools" Permissions-Policy feature exists exactly when the runtime
// feature is on. (document.modelContext itself is [SecureContext], so it
// is absent from the about:blank a new tab starts on, and a page could
// fake it in its own world.)
func detectNative(c session) (bool, error) {
	tree, err := proto.PageGetFrameTree{}.Call(c)
	if err != nil {
		return false, err
	}
	_, known, err := toolsPolicy(c, tree.FrameTree.Frame.ID)
	return known, err
}

// toolsPolicy is the browser's verdict on the "tools" Permissions-Policy
// feature for one frame: known is false when the browser has no such
// feature (no native WebMCP), allowed says whether the frame may use it.
func toolsPolicy(c session, frame proto.PageFrameID) (allowed, known bool, err error) {
	st, err := proto.PageGetPermissionsPolicyState{FrameID: frame}.Call(c)
	if err != nil {
		return false, false, err
	}
	for _, x := range st.States {
		if x.Feature == "tools" {
			return x.Allowed, true, nil
		}
	}
	return false, false, nil
}

func randomID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// frameContext is a frame's default (main-world) execution context and the
// session it lives in, with the polyfill's bridge once bridge found it.
type frameContext struct {
	sid    proto.TargetSessionID
	id     proto.RuntimeExecutionContextID
	bridge proto.RuntimeRemoteObjectID // in bridgeGroup; "" until found
}

// bridgeGroup holds the bridge objects bridge found. They live as long as
// their context (each frameContext entry goes with it); Close releases
// what is left.
const bridgeGroup = "tabwarden-bridge"

// cdpEvent is one session event: its method and a decoder for its params.
// It decouples the pump from rod.Message, whose payload cannot be built
// outside rod (the pure tests feed their own).
type cdpEvent struct {
	SessionID proto.TargetSessionID
	Method    string
	load      func(proto.Event) bool
}

func fromRod(ctx context.Context, in <-chan *rod.Message) <-chan cdpEvent {
	out := make(chan cdpEvent)
	go func() {
		defer close(out)
		for m := range in {
			select {
			case out <- cdpEvent{SessionID: m.SessionID, Method: m.Method, load: m.Load}:
			case <-ctx.Done():
				return
			}
		}
	}()
	return out
}

// pump applies the session's events to the Site's state. It never blocks
// on anything but the event channel: waiters have a one-slot buffer.
func (s *Site) pump(events <-chan cdpEvent) {
	defer close(s.pumped)
	for {
		select {
		case <-s.ctx.Done():
			s.failWaiters()
			return
		case m, ok := <-events:
			if !ok {
				s.cancel()
				s.failWaiters()
				return
			}
			s.apply(m)
		}
	}
}

func (s *Site) failWaiters() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for id, w := range s.waiters {
		w <- WebMCPToolResponded{InvocationID: id, Status: "Canceled"}
		delete(s.waiters, id)
	}
}

func (s *Site) apply(m cdpEvent) {
	// rod's Message.Load panics on an event that does not decode into our
	// type; such an event is dropped, never fatal to the tab.
	defer func() { _ = recover() }()
	s.mu.Lock()
	defer s.mu.Unlock()
	_, child := s.children[m.SessionID]
	if m.SessionID != s.main && !child {
		return // another tab's, or the browser's
	}
	switch m.Method {
	case "Target.attachedToTarget":
		var e proto.TargetAttachedToTarget
		if !m.load(&e) || e.TargetInfo == nil {
			return
		}
		if e.TargetInfo.Type == "iframe" {
			s.children[e.SessionID] = proto.PageFrameID(e.TargetInfo.TargetID)
			s.frameSession[proto.PageFrameID(e.TargetInfo.TargetID)] = e.SessionID
		}
		go s.setupChild(e.SessionID)
	case "Target.detachedFromTarget":
		var e proto.TargetDetachedFromTarget
		if !m.load(&e) {
			return
		}
		delete(s.children, e.SessionID)
		for f, sid := range s.frameSession {
			if sid == e.SessionID {
				s.forgetFrameLocked(f)
			}
		}
	case "WebMCP.toolsAdded":
		var e WebMCPToolsAdded
		if !m.load(&e) {
			return
		}
		for _, t := range e.Tools {
			if child {
				s.frameSession[t.FrameID] = m.SessionID
			}
			list := s.native[t.FrameID]
			replaced := false
			for i := range list {
				if list[i].Name == t.Name {
					list[i], replaced = t, true
				}
			}
			if !replaced {
				list = append(list, t)
			}
			s.native[t.FrameID] = list
		}
	case "WebMCP.toolsRemoved":
		var e WebMCPToolsRemoved
		if !m.load(&e) {
			return
		}
		for _, t := range e.Tools {
			list := s.native[t.FrameID]
			for i := range list {
				if list[i].Name == t.Name {
					s.native[t.FrameID] = append(list[:i:i], list[i+1:]...)
					break
				}
			}
		}
	case "WebMCP.toolResponded":
		var e WebMCPToolResponded
		if !m.load(&e) {
			return
		}
		if w, ok := s.waiters[e.InvocationID]; ok {
			delete(s.waiters, e.InvocationID)
			w <- e
			return
		}
		// The reply to invokeTool may still be on its way to the caller.
		if len(s.early) > 64 {
			clear(s.early)
		}
		s.early[e.InvocationID] = e
	case "Page.frameNavigated":
		var e proto.PageFrameNavigated
		if !m.load(&e) || e.Frame == nil {
			return
		}
		if child {
			s.frameSession[e.Frame.ID] = m.SessionID
		} else if owner, ok := s.frameSession[e.Frame.ID]; ok && owner != m.SessionID {
			delete(s.frameSession, e.Frame.ID) // came back in-process
		}
		if e.Frame.ParentID == "" && m.SessionID == s.main {
			s.rev++
			clear(s.native)
		}
		s.frameGen[e.Frame.ID]++
		delete(s.native, e.Frame.ID)
	case "Page.frameDetached":
		var e proto.PageFrameDetached
		if !m.load(&e) {
			return
		}
		if owner, ok := s.frameSession[e.FrameID]; ok && owner != m.SessionID {
			// A "swap" seen from the old process: the frame lives on in
			// another session, whose events may already have arrived.
			return
		}
		s.forgetFrameLocked(e.FrameID)
	case "Runtime.executionContextCreated":
		var e proto.RuntimeExecutionContextCreated
		if !m.load(&e) || e.Context == nil {
			return
		}
		// auxData is already decoded; read it in place rather than
		// re-encoding it on every context the page creates.
		aux := e.Context.AuxData
		frame, _ := aux["frameId"].Val().(string)
		if aux["isDefault"].Bool() && frame != "" {
			s.contexts[proto.PageFrameID(frame)] = frameContext{sid: m.SessionID, id: e.Context.ID}
			if child {
				s.frameSession[proto.PageFrameID(frame)] = m.SessionID
			}
		}
	case "Runtime.executionContextDestroyed":
		var e proto.RuntimeExecutionContextDestroyed
		if !m.load(&e) {
			return
		}
		for f, fc := range s.contexts {
			if fc.sid == m.SessionID && fc.id == e.ExecutionContextID {
				delete(s.contexts, f)
			}
		}
	case "Runtime.executionContextsCleared":
		for f, fc := range s.contexts {
			if fc.sid == m.SessionID {
				delete(s.contexts, f)
			}
		}
	case "Network.responseReceived":
		var e proto.NetworkResponseReceived
		if !m.load(&e) || e.Type != proto.NetworkResourceTypeDocument || e.FrameID == "" || e.Response == nil {
			return
		}
		h := http.Header{}
		for k, v := range e.Response.Headers {
			h.Add(k, v.Str())
		}
		s.ppNone[e.FrameID] = toolsDisallowed(h.Values("Permissions-Policy"))
	}
}

// forgetFrameLocked drops a frame that went away: its handles go stale
// (a new generation) and its tools, context and session are forgotten.
func (s *Site) forgetFrameLocked(f proto.PageFrameID) {
	s.frameGen[f]++
	delete(s.native, f)
	delete(s.contexts, f)
	delete(s.frameSession, f)
}

// toolsDisallowed reports whether a Permissions-Policy header value turns
// the "tools" feature off for the document ("tools=()"). Only the empty
// allowlist matters here: every frame we consider is either the top
// document or same-origin with it or explicitly delegated.
func toolsDisallowed(values []string) bool {
	for _, v := range values {
		for _, item := range strings.Split(v, ",") {
			k, list, ok := strings.Cut(strings.TrimSpace(item), "=")
			if ok && strings.TrimSpace(k) == "tools" && strings.ReplaceAll(list, " ", "") == "()" {
				return true
			}
		}
	}
	return false
}

// snapshot is the identity of a listing: the document revision and the
// generation of each frame at the time.
type frameInfo struct {
	id     proto.PageFrameID
	parent proto.PageFrameID
	origin string
	gen    uint64
}

// frames returns the eligible frames of the current document and the
// revision they belong to, plus rejected entries for frames that are
// excluded for a reason the operator should see.
func (s *Site) frames(ctx context.Context) (uint64, []frameInfo, error) {
	c, done := s.sess(ctx, "")
	defer done()
	s.mu.Lock()
	rev := s.rev
	kids := make([]proto.TargetSessionID, 0, len(s.children))
	for sid := range s.children {
		kids = append(kids, sid)
	}
	s.mu.Unlock()
	tree, err := proto.PageGetFrameTree{}.Call(c)
	if err != nil {
		return 0, nil, err
	}
	var out []frameInfo
	seen := map[proto.PageFrameID]bool{} // walked, with its verdict
	top := tree.FrameTree.Frame.SecurityOrigin
	var walk func(cs session, t *proto.PageFrameTree, parentOK bool)
	walk = func(cs session, t *proto.PageFrameTree, parentOK bool) {
		f := t.Frame
		ok := parentOK && s.eligible(cs, c, f, top)
		seen[f.ID] = ok
		s.mu.Lock()
		if cs.sid != "" {
			s.frameSession[f.ID] = cs.sid
		}
		if ok {
			out = append(out, frameInfo{id: f.ID, parent: f.ParentID, origin: f.SecurityOrigin, gen: s.frameGen[f.ID]})
		}
		s.mu.Unlock()
		for _, ch := range t.ChildFrames {
			walk(cs, ch, ok)
		}
	}
	walk(c, tree.FrameTree, true)
	// Out-of-process frames, each in its own session, parents first: a
	// frame whose parent was never seen is not eligible.
	trees := map[proto.TargetSessionID]*proto.PageFrameTree{}
	for _, sid := range kids {
		cs := c
		cs.sid = sid
		if t, err := (proto.PageGetFrameTree{}).Call(cs); err == nil && t.FrameTree != nil && t.FrameTree.Frame != nil {
			trees[sid] = t.FrameTree
		}
	}
	for progress := true; progress && len(trees) > 0; {
		progress = false
		for sid, t := range trees {
			parentOK, known := seen[t.Frame.ParentID]
			if !known {
				continue
			}
			cs := c
			cs.sid = sid
			walk(cs, t, parentOK)
			delete(trees, sid)
			progress = true
		}
	}
	s.mu.Lock()
	same := s.rev == rev
	s.mu.Unlock()
	if !same {
		return 0, nil, consent.Errorf(consent.CodePageChanged, consent.NextObserve, "the page navigated while its site tools were listed")
	}
	return rev, out, nil
}

// eligible applies DESIGN §7's frame rule to one frame whose ancestors are
// eligible: the top document and same-origin frames, cross-origin frames
// only with <iframe allow="tools">; Permissions-Policy tools=() excludes.
// c is the frame's own session, owner the page's (where the <iframe> of an
// out-of-process frame lives).
func (s *Site) eligible(c, owner session, f *proto.PageFrame, top string) bool {
	if s.mode == ModeNative {
		// The browser knows the feature: its policy state covers the
		// header, the allow attribute and inheritance.
		allowed, _, err := toolsPolicy(c, f.ID)
		return err == nil && allowed
	}
	s.mu.Lock()
	blocked := s.ppNone[f.ID]
	s.mu.Unlock()
	if blocked {
		return false
	}
	if f.ParentID == "" || f.SecurityOrigin == top {
		return true
	}
	return delegated(owner, f.ID) || (c.sid != "" && delegated(c, f.ID))
}

// delegated reads the owner <iframe>'s allow attribute over CDP (never
// through page script) and looks for the "tools" feature.
func delegated(c session, id proto.PageFrameID) bool {
	owner, err := proto.DOMGetFrameOwner{FrameID: id}.Call(c)
	if err != nil {
		return false
	}
	n, err := proto.DOMDescribeNode{BackendNodeID: owner.BackendNodeID}.Call(c)
	if err != nil || n.Node == nil {
		return false
	}
	a := n.Node.Attributes
	for i := 0; i+1 < len(a); i += 2 {
		if strings.EqualFold(a[i], "allow") {
			for _, d := range strings.Split(a[i+1], ";") {
				if fs := strings.Fields(d); len(fs) > 0 && fs[0] == "tools" {
					return len(fs) == 1 || !(len(fs) == 2 && fs[1] == "'none'")
				}
			}
		}
	}
	return false
}

// listing is one discovery pass before sanitizing.
type listing struct {
	rev    uint64
	gens   map[proto.PageFrameID]uint64
	descs  []Descriptor
	broken []Rejected // frames that did not answer
}

func (s *Site) list(ctx context.Context) (*listing, error) {
	rev, frames, err := s.frames(ctx)
	if err != nil {
		return nil, err
	}
	l := &listing{rev: rev, gens: map[proto.PageFrameID]uint64{}}
	for _, f := range frames {
		l.gens[f.id] = f.gen
		ds, err := s.frameDescriptors(ctx, f)
		if err != nil {
			l.broken = append(l.broken, Rejected{Origin: f.origin, Code: consent.CodeInvalidSiteTool,
				Error: "a frame's tools could not be read"})
			continue
		}
		l.descs = append(l.descs, ds...)
	}
	return l, nil
}

func (s *Site) frameDescriptors(ctx context.Context, f frameInfo) ([]Descriptor, error) {
	if s.mode == ModeNative {
		s.mu.Lock()
		defer s.mu.Unlock()
		var out []Descriptor
		for _, t := range s.native[f.id] {
			d := Descriptor{Name: t.Name, Description: t.Description, InputSchema: t.InputSchema, Origin: f.origin, Frame: string(f.id)}
			if t.Annotations != nil {
				d.Annotations = Annotations{ReadOnlyHint: t.Annotations.ReadOnly, UntrustedContent: t.Annotations.UntrustedContent,
					Consequential: t.Annotations.Consequential}
			}
			out = append(out, d)
		}
		return out, nil
	}
	c, done := s.sess(ctx, "")
	defer done()
	group := "tabwarden-" + randomID()
	c, br, err := s.bridge(c, f.id)
	if err != nil {
		return nil, err
	}
	defer func() { _ = proto.RuntimeReleaseObjectGroup{ObjectGroup: group}.Call(c) }()
	r, err := proto.RuntimeCallFunctionOn{FunctionDeclaration: `function () { return this("list"); }`,
		ObjectID: br, ReturnByValue: true, ObjectGroup: group}.Call(c)
	if err != nil {
		return nil, err
	}
	if r.ExceptionDetails != nil {
		return nil, errors.New("bridge threw")
	}
	var raw []struct {
		Name        *string      `json:"name"`
		Title       *string      `json:"title"`
		Description *string      `json:"description"`
		InputSchema *string      `json:"inputSchema"`
		Annotations *Annotations `json:"annotations"`
	}
	if err := json.Unmarshal([]byte(r.Result.Value.Str()), &raw); err != nil {
		return nil, err
	}
	var out []Descriptor
	for _, t := range raw {
		d := Descriptor{Origin: f.origin, Frame: string(f.id)}
		if t.Name != nil {
			d.Name = *t.Name
		}
		if t.Title != nil {
			d.Title = *t.Title
		}
		if t.Description != nil {
			d.Description = *t.Description
		}
		if t.InputSchema != nil {
			d.InputSchema = json.RawMessage(*t.InputSchema)
		}
		if t.Annotations != nil {
			d.Annotations = *t.Annotations
		}
		out = append(out, d)
	}
	return out, nil
}

// bridge finds the polyfill's bridge in a frame's main world: document's
// own modelContext property must be a non-configurable, non-writable data
// property (only the polyfill, running before any page script, can have
// made it so), and the bridge is that object's private #bridge field,
// which no script can read. No page code runs on the way: document is an
// unforgeable accessor, and the rest are CDP property reads.
//
// It returns the session the bridge lives in (the frame's), for the calls
// that use the object id. The answer holds for the context's life (the
// property can never change), so it is looked up once per context, not
// once per listing and per call.
func (s *Site) bridge(c session, frame proto.PageFrameID) (session, proto.RuntimeRemoteObjectID, error) {
	s.mu.Lock()
	fc, ok := s.contexts[frame]
	s.mu.Unlock()
	if !ok {
		return c, "", errors.New("frame has no script context")
	}
	if fc.sid != s.main {
		c.sid = fc.sid
	}
	if fc.bridge != "" {
		return c, fc.bridge, nil
	}
	br, err := findBridge(c, fc.id)
	if err != nil {
		return c, "", err
	}
	s.mu.Lock()
	if now, ok := s.contexts[frame]; ok && now.sid == fc.sid && now.id == fc.id {
		now.bridge = br
		s.contexts[frame] = now
	}
	s.mu.Unlock()
	return c, br, nil
}

// findBridge does bridge's property reads in context id, keeping what it
// finds in bridgeGroup (property values join their owner's group).
func findBridge(c session, id proto.RuntimeExecutionContextID) (proto.RuntimeRemoteObjectID, error) {
	doc, err := proto.RuntimeEvaluate{Expression: "document", ContextID: id, ObjectGroup: bridgeGroup}.Call(c)
	if err != nil || doc.ExceptionDetails != nil || doc.Result.ObjectID == "" {
		return "", errors.New("no document")
	}
	props, err := proto.RuntimeGetProperties{ObjectID: doc.Result.ObjectID, OwnProperties: true}.Call(c)
	if err != nil {
		return "", err
	}
	var api proto.RuntimeRemoteObjectID
	for _, p := range props.Result {
		if p.Name == "modelContext" && p.Value != nil && p.Get == nil && !p.Configurable && !p.Writable {
			api = p.Value.ObjectID
		}
	}
	if api == "" {
		return "", errors.New("no polyfill in frame")
	}
	props, err = proto.RuntimeGetProperties{ObjectID: api, OwnProperties: true}.Call(c)
	if err != nil {
		return "", err
	}
	for _, p := range props.PrivateProperties {
		if p.Name == "#bridge" && p.Value != nil && p.Value.ObjectID != "" {
			return p.Value.ObjectID, nil
		}
	}
	return "", errors.New("no bridge in frame")
}

// invoke runs one tool and returns its raw result. ctx carries the
// execution deadline and take-over cancellation; when it ends first, the
// call is cancelled in the page and ctx's error is returned.
func (s *Site) invoke(ctx context.Context, frame proto.PageFrameID, name string, input json.RawMessage) (json.RawMessage, error) {
	if s.mode == ModeNative {
		return s.invokeNative(ctx, frame, name, input)
	}
	return s.invokePolyfill(ctx, frame, name, input)
}

var errToolFailed = errors.New("the site tool failed")

func (s *Site) invokeNative(ctx context.Context, frame proto.PageFrameID, name string, input json.RawMessage) (json.RawMessage, error) {
	sid := s.sessionFor(frame)
	c, done := s.sess(ctx, sid)
	res, err := WebMCPInvokeTool{FrameID: frame, ToolName: name, Input: input}.Call(c)
	done()
	if err != nil {
		return nil, fmt.Errorf("invoke: %w", err)
	}
	w := make(chan WebMCPToolResponded, 1)
	s.mu.Lock()
	if e, ok := s.early[res.InvocationID]; ok {
		delete(s.early, res.InvocationID)
		w <- e
	} else {
		s.waiters[res.InvocationID] = w
	}
	s.mu.Unlock()
	select {
	case e := <-w:
		switch e.Status {
		case "Completed":
			if len(e.Output) == 0 {
				return json.RawMessage("null"), nil
			}
			return e.Output, nil
		case "Canceled":
			return nil, context.Canceled
		default:
			return nil, errToolFailed
		}
	case <-ctx.Done():
		s.mu.Lock()
		delete(s.waiters, res.InvocationID)
		s.mu.Unlock()
		c, done := s.sess(context.Background(), sid)
		defer done()
		_ = WebMCPCancelInvocation{InvocationID: res.InvocationID}.Call(c)
		return nil, ctx.Err()
	}
}

func (s *Site) invokePolyfill(ctx context.Context, frame proto.PageFrameID, name string, input json.RawMessage) (json.RawMessage, error) {
	group := "tabwarden-" + randomID()
	c, done := s.sess(ctx, "")
	bc, br, err := s.bridge(c, frame)
	done()
	sid := bc.sid
	release := func() {
		c, done := s.sess(context.Background(), sid)
		defer done()
		_ = proto.RuntimeReleaseObjectGroup{ObjectGroup: group}.Call(c)
	}
	defer release()
	if err != nil {
		return nil, fmt.Errorf("invoke: %w", err)
	}
	callID := randomID()
	arg := func(v string) *proto.RuntimeCallArgument { return &proto.RuntimeCallArgument{Value: gson.New(v)} }
	type reply struct {
		r   *proto.RuntimeCallFunctionOnResult
		err error
	}
	ch := make(chan reply, 1)
	go func() {
		r, err := proto.RuntimeCallFunctionOn{FunctionDeclaration: `function (n, i, c) { return this("invoke", n, i, c); }`,
			ObjectID: br, Arguments: []*proto.RuntimeCallArgument{arg(name), arg(string(input)), arg(callID)},
			AwaitPromise: true, ReturnByValue: true, ObjectGroup: group}.Call(session{p: s.p, ctx: ctx, sid: sid})
		ch <- reply{r, err}
	}()
	select {
	case rep := <-ch:
		if rep.err != nil {
			if ctx.Err() != nil {
				s.cancelPolyfill(sid, br, callID)
				return nil, ctx.Err()
			}
			return nil, fmt.Errorf("invoke: %w", rep.err)
		}
		if rep.r.ExceptionDetails != nil {
			return nil, errToolFailed
		}
		var out struct {
			OK       bool    `json:"ok"`
			Canceled bool    `json:"canceled"`
			Result   *string `json:"result"`
		}
		if err := json.Unmarshal([]byte(rep.r.Result.Value.Str()), &out); err != nil {
			return nil, errToolFailed
		}
		switch {
		case out.Canceled:
			return nil, context.Canceled
		case !out.OK || out.Result == nil:
			return nil, errToolFailed
		}
		return json.RawMessage(*out.Result), nil
	case <-ctx.Done():
		s.cancelPolyfill(sid, br, callID)
		return nil, ctx.Err()
	}
}

func (s *Site) cancelPolyfill(sid proto.TargetSessionID, br proto.RuntimeRemoteObjectID, callID string) {
	c, done := s.sess(context.Background(), sid)
	defer done()
	_, _ = proto.RuntimeCallFunctionOn{FunctionDeclaration: `function (c) { return this("cancel", c); }`,
		ObjectID: br, Arguments: []*proto.RuntimeCallArgument{{Value: gson.New(callID)}}}.Call(c)
}
