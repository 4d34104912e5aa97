package webmcp

import (
	"context"
	"crypto/rand"
	_ "embed"
	"encoding/hex"
	"fmt"
	"maps"
	"sync"

	"github.com/go-rod/rod"
	"github.com/go-rod/rod/lib/proto"

	"github.com/tabwarden/tabwarden/browser/cdpedge"
	"github.com/tabwarden/tabwarden/consent/errcode"
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
		return nil, &errcode.Error{Code: errcode.BrowserOperationFailed, Message: fmt.Sprintf("site tools: %s: %v", what, err)}
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
		return fmt.Errorf("enable Page: %w", err)
	}
	switch s.mode {
	case ModeNative:
		if err := (WebMCPEnable{}).Call(c); err != nil {
			return fmt.Errorf("WebMCP.enable: %w", err)
		}
	case ModePolyfill:
		if err := (proto.RuntimeEnable{}).Call(c); err != nil {
			return fmt.Errorf("enable Runtime: %w", err)
		}
		if err := (proto.NetworkEnable{}).Call(c); err != nil {
			return fmt.Errorf("enable Network: %w", err)
		}
		r, err := (proto.PageAddScriptToEvaluateOnNewDocument{Source: polyfillJS, RunImmediately: true}).Call(c)
		if err != nil {
			return fmt.Errorf("install polyfill: %w", err)
		}
		s.mu.Lock()
		s.scripts[c.sid] = r.Identifier
		s.mu.Unlock()
	}
	// No filter: Chromium 156 holds a dedicated worker waiting for a
	// debugger even when the filter leaves workers out, and nobody would
	// release it. A child that is not a frame is released and let go.
	err := proto.TargetSetAutoAttach{AutoAttach: true, WaitForDebuggerOnStart: true, Flatten: true}.Call(c)
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

// letGo releases an auto-attached child that is not a frame (a worker)
// and detaches from it: site tools live in frames only.
func (s *Site) letGo(sid proto.TargetSessionID) {
	// Not under s.ctx: a Site closing meanwhile must still let it run.
	r, rdone := s.sess(context.Background(), sid)
	defer rdone()
	_ = proto.RuntimeRunIfWaitingForDebugger{}.Call(r)
	p, pdone := s.sess(context.Background(), "")
	defer pdone()
	_ = proto.TargetDetachFromTarget{SessionID: sid}.Call(p)
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
// by cdpedge.Call under ctx.
func (s *Site) sess(ctx context.Context, sid proto.TargetSessionID) (session, context.CancelFunc) {
	c, cancel := context.WithTimeout(ctx, cdpedge.Call)
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
