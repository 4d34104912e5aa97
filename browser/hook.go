package browser

import (
	"net/url"
	"strings"

	"github.com/go-rod/rod/lib/proto"

	"github.com/tabwarden/tabwarden/consent"
	"github.com/tabwarden/tabwarden/consent/errcode"
	"github.com/tabwarden/tabwarden/policy"
)

// onPaused decides one request held by the browser-level Fetch domain. It
// runs on its own goroutine: it may wait for the operator.
//
// Every path ends in exactly one continue or fail, so no request is left
// hanging; a request is continued only on an explicit allow.
func (b *Browser) onPaused(e *proto.FetchRequestPaused) {
	if e.ResponseStatusCode != nil || e.ResponseErrorReason != "" {
		b.onResponse(e)
		return
	}
	req := e.Request
	if speculative(req) {
		// A load Chromium makes on a guess, for no one: never needed,
		// and for a document of an origin the tab has no grant for it
		// would be the page without the review. Not counted as blocked:
		// the page is not missing anything.
		b.fail(e)
		return
	}
	main := e.ResourceType == proto.NetworkResourceTypeDocument
	dec := b.decide(req.URL, req.Method, req.HasPostData, false)

	t, owned := b.mainFrameTab(e)
	if owned && main {
		b.reg.mu.Lock()
		t.navs++
		close(t.lifeCh)
		t.lifeCh = make(chan struct{})
		b.reg.mu.Unlock()
	}
	if !dec.Allow {
		switch {
		case owned && main:
			b.refuse(t, e, policyError(dec))
		case t != nil && main:
			// An operator tab: Chromium's own "blocked" page tells the
			// operator what happened.
			b.setDenial(t, policyError(dec))
			b.fail(e)
		default:
			b.countBlocked(e.FrameID)
			b.fail(e)
		}
		return
	}
	if !owned || !main {
		if main && t == nil && !b.subframeGranted(e) {
			b.countBlocked(e.FrameID)
			b.fail(e)
			return
		}
		b.resume(e)
		return
	}

	b.reg.mu.Lock()
	conv, id, agents := t.conv, t.id, t.agentNavs
	b.reg.mu.Unlock()
	if b.gate.Paused(conv) {
		if agents > 0 {
			// An agent navigation that slipped past its op's cancellation:
			// the tab is the operator's now.
			b.refuse(t, e, errPaused())
			return
		}
		// Taken over: navigation is the operator's; policy (above) still
		// applies and no grant is created.
		b.resume(e)
		return
	}
	origin, ok := originOf(req.URL)
	if !ok {
		b.refuse(t, e, errcode.Errorf(errcode.InvalidURL, errcode.NextNone, "only http and https pages can be opened"))
		return
	}
	ask := consent.Request{
		Gate:         consent.GateNavigation,
		Conversation: conv,
		Tab:          id,
		Origin:       origin,
		Recheck: func() error {
			// The approval is for this tab of this conversation; if the
			// tab closed or changed hands meanwhile, nothing is sent.
			_, err := b.reg.lookup(conv, id)
			return err
		},
	}
	release := b.park(e, ask)
	ctx, withdraw := b.heldAsk(conv)
	err := b.gate.Ask(ctx, ask)
	withdraw()
	if err == nil && b.gate.Paused(conv) {
		err = errPaused() // taken over between the approval and now
	}
	if err != nil {
		if release == nil {
			b.refuse(t, e, err)
			return
		}
		b.setDenial(t, err)
		release(false)
		b.afterRefuse(t, err)
		return
	}
	b.reg.mu.Lock()
	t.blocked, t.loading = 0, true
	t.sent++
	info := t.info()
	b.reg.mu.Unlock()
	b.gate.PutTab(info)
	if release != nil {
		b.hold.expectBack(string(e.FrameID), req.URL)
		release(true)
		return
	}
	b.resume(e)
}

// subframeGranted reports whether a document request of a frame that is
// not a tab's main frame may go: design.md §8, no document of an origin a task
// tab has no navigation grant for is fetched before consent. A sub-frame
// of a task tab (known from Page.frameAttached on the tab's session or on
// one of its out-of-process frames', at any depth) may load only an origin
// a grant of its conversation already covers for that tab — no review is
// raised for it; the operator's tabs and a taken-over conversation's load
// as policy allows. A frame the events did not place is looked for in the
// task tabs' frame trees; one that may still be a task tab's it could not
// be looked for in loads only an origin every such tab may load.
func (b *Browser) subframeGranted(e *proto.FetchRequestPaused) bool {
	origin, ok := originOf(e.Request.URL)
	if !ok {
		return true // not http(s): nothing leaves the browser
	}
	c, ok := b.gate.(coverage)
	if !ok {
		return true // a Gatekeeper that cannot tell (tests' fakes)
	}
	b.reg.mu.Lock()
	target, placed := b.reg.frames[e.FrameID]
	b.reg.mu.Unlock()
	var tabs []*tab
	if placed {
		b.reg.mu.Lock()
		tabs = append(tabs, b.reg.byTarget[target])
		b.reg.mu.Unlock()
	} else {
		tabs = b.placeFrame(e.FrameID)
	}
	for _, t := range tabs {
		b.reg.mu.Lock()
		var conv consent.ConversationID
		var id consent.TabID
		if t != nil && !t.closed {
			conv, id = t.conv, t.id
		}
		b.reg.mu.Unlock()
		if conv == "" || b.gate.Paused(conv) {
			continue
		}
		if !c.Covered(consent.Request{Gate: consent.GateNavigation, Conversation: conv, Tab: id, Origin: origin}) {
			return false
		}
	}
	return true
}

// placeFrame looks for a frame no event placed in the frame trees of every
// live task tab's followed sessions (its own and its out-of-process
// frames'). It returns the tab the frame is in; nil when it is in none
// (an operator's tab); or, when some tab could not be searched (no
// session, a tree that could not be read, an out-of-process frame that
// could not be followed), every such tab: the frame may be any of theirs.
func (b *Browser) placeFrame(frame proto.PageFrameID) []*tab {
	type place struct {
		sid  proto.TargetSessionID
		tab  *tab
		conv consent.ConversationID
	}
	var places []place
	var unsure []*tab
	b.reg.mu.Lock()
	for _, t := range b.reg.byTarget {
		if t.conv == "" || t.closed {
			continue
		}
		if t.session == "" || b.reg.unfollowed[t.target] {
			unsure = append(unsure, t)
		}
		if t.session != "" {
			places = append(places, place{t.session, t, t.conv})
		}
	}
	for sid, target := range b.reg.oopifs {
		if t := b.reg.byTarget[target]; t != nil && t.conv != "" && !t.closed {
			places = append(places, place{sid, t, t.conv})
		}
	}
	b.reg.mu.Unlock()
	for _, p := range places {
		if b.gate.Paused(p.conv) {
			continue // its frames load as policy allows
		}
		ctx, cancel := b.call(b.ctx)
		res, err := proto.PageGetFrameTree{}.Call(client{b: b, sid: p.sid, ctx: ctx})
		cancel()
		if err != nil {
			b.log.Debug("place frame: frame tree", "err", err)
			unsure = append(unsure, p.tab)
			continue
		}
		found := false
		b.reg.mu.Lock()
		walkFrames(res.FrameTree, func(f proto.PageFrameID) {
			// Every frame of the tree is the tab's; what was looked up
			// once need not be again.
			b.reg.frames[f] = p.tab.target
			found = found || f == frame
		})
		b.reg.mu.Unlock()
		if found {
			return []*tab{p.tab}
		}
	}
	return unsure
}

// walkFrames calls fn for every frame of tree.
func walkFrames(tree *proto.PageFrameTree, fn func(proto.PageFrameID)) {
	if tree == nil {
		return
	}
	if tree.Frame != nil {
		fn(tree.Frame.ID)
	}
	for _, c := range tree.ChildFrames {
		walkFrames(c, fn)
	}
}

// coverage is the part of the consent engine that says whether a grant
// already answers a request; *consent.Engine satisfies it.
type coverage interface {
	Covered(req consent.Request) bool
}

var _ coverage = (*consent.Engine)(nil)

// park moves a main-frame request that is about to wait for a review out
// of Chromium's Fetch domain into the hold server (see holdServer), and
// returns its release; nil when no review will be shown (a grant covers
// it) or the request could not be moved, and it stays paused for the
// moment its answer takes. A Gatekeeper that cannot tell gets every
// request parked.
func (b *Browser) park(e *proto.FetchRequestPaused, ask consent.Request) func(bool) {
	if e.RedirectedRequestID != "" && b.hold.takeBack(string(e.FrameID), e.Request.URL) {
		return nil // back from its hold, approved
	}
	if c, ok := b.gate.(coverage); ok && c.Covered(ask) {
		return nil
	}
	to, release := b.hold.park(e.Request.URL)
	ctx, cancel := b.call(b.ctx)
	defer cancel()
	if err := (proto.FetchContinueRequest{RequestID: e.RequestID, URL: to}).Call(b.rod().Context(ctx)); err != nil {
		b.log.Debug("park request", "err", err)
		release(false)
		return nil
	}
	return release
}

// mainFrameTab finds the tab whose main frame issued e. owned says it is a
// live task tab. A frame id that is no known tab may be a popup whose
// targetCreated has not arrived yet (its first request can overtake it), so
// for documents the target is looked up before deciding it is a sub-frame.
func (b *Browser) mainFrameTab(e *proto.FetchRequestPaused) (*tab, bool) {
	target := proto.TargetTargetID(e.FrameID)
	b.reg.mu.Lock()
	t := b.reg.byTarget[target]
	b.reg.mu.Unlock()
	if t == nil && e.ResourceType == proto.NetworkResourceTypeDocument && e.FrameID != "" {
		ctx, cancel := b.call(b.ctx)
		res, err := proto.TargetGetTargetInfo{TargetID: target}.Call(b.rod().Context(ctx))
		cancel()
		if err == nil && res.TargetInfo != nil {
			b.onTargetInfo(res.TargetInfo, true)
			b.reg.mu.Lock()
			t = b.reg.byTarget[target]
			if t == nil && b.reg.unclaimed[target].TargetID != "" {
				// An opener-less target while a NewTab is in flight: it
				// cannot be the new tab (those start blank and issue no
				// request), so it is the operator's.
				b.reg.unclaimed[target] = *res.TargetInfo
			}
			b.reg.mu.Unlock()
		}
	}
	if t == nil {
		return nil, false
	}
	b.reg.mu.Lock()
	defer b.reg.mu.Unlock()
	return t, t.conv != "" && !t.closed
}

func (b *Browser) setDenial(t *tab, err error) {
	b.reg.mu.Lock()
	t.denial = err
	b.reg.mu.Unlock()
}

func (b *Browser) countBlocked(frame proto.PageFrameID) {
	b.reg.mu.Lock()
	t := b.reg.byTarget[proto.TargetTargetID(frame)]
	var info consent.TabInfo
	if t != nil {
		t.blocked++
		info = t.info()
	}
	b.reg.mu.Unlock()
	if t != nil {
		b.gate.PutTab(info)
	}
}

func (b *Browser) resume(e *proto.FetchRequestPaused) {
	ctx, cancel := b.call(b.ctx)
	defer cancel()
	if err := (proto.FetchContinueRequest{RequestID: e.RequestID}).Call(b.rod().Context(ctx)); err != nil {
		b.log.Debug("continue request", "err", err)
	}
}

func (b *Browser) fail(e *proto.FetchRequestPaused) {
	ctx, cancel := b.call(b.ctx)
	defer cancel()
	err := proto.FetchFailRequest{RequestID: e.RequestID, ErrorReason: proto.NetworkErrorReasonBlockedByClient}.Call(b.rod().Context(ctx))
	if err != nil {
		b.log.Debug("fail request", "err", err)
	}
}

// refuse ends a task tab's main-frame request that may not go out and
// releases the tab. The request is answered locally with 204 rather than
// failed: a 204 aborts the navigation without committing Chromium's error
// page, so nothing can commit after release has put the tab on about:blank.
//
// A tab of a taken-over conversation is not released: it is the
// operator's now, and the 204 left it on the page it showed.
func (b *Browser) refuse(t *tab, e *proto.FetchRequestPaused, why error) {
	b.setDenial(t, why)
	ctx, cancel := b.call(b.ctx)
	err := proto.FetchFulfillRequest{RequestID: e.RequestID, ResponseCode: 204, Body: []byte{}}.Call(b.rod().Context(ctx))
	cancel()
	if err != nil {
		b.log.Debug("refuse request", "err", err)
		b.fail(e)
	}
	b.afterRefuse(t, why)
}

// afterRefuse releases a task tab whose main-frame request was refused,
// unless its conversation is taken over.
func (b *Browser) afterRefuse(t *tab, why error) {
	b.reg.mu.Lock()
	conv := t.conv
	b.reg.mu.Unlock()
	if errcode.Of(why) == errcode.Paused || b.gate.Paused(conv) {
		return
	}
	b.release(t)
}

func errPaused() error {
	return errcode.Errorf(errcode.Paused, errcode.NextUserResume, "the operator has taken over this conversation")
}

// speculative reports a request Chromium sends on a guess: <link
// rel=prefetch> (and anything else marked so) carries "Sec-Purpose:
// prefetch" (older Chromium: "Purpose: prefetch"), a prerender's document
// "Sec-Purpose: prefetch;prerender".
func speculative(req *proto.NetworkRequest) bool {
	for k, v := range req.Headers {
		if k = strings.ToLower(k); k == "sec-purpose" || k == "purpose" {
			if strings.Contains(strings.ToLower(v.Str()), "prefetch") {
				return true
			}
		}
	}
	return false
}

// hookPatterns is the browser-level Fetch.enable of the hook. Under a
// managed policy that restricts origins or uploads, every request is
// paused at the Request stage (and documents and worker scripts again at
// the Response stage for connectSrc). Without one, documents are, for
// navigation consent, and requests of type Fetch, which is what Chromium
// 156 calls a <link rel=prefetch> (it has no Prefetch filter): those are
// failed as speculative. Other sub-resources have no rule to answer to,
// so pausing them would only cost page-load time (see
// BenchmarkPageLoadHook).
func (b *Browser) hookPatterns() proto.FetchEnable {
	pat := &proto.FetchRequestPattern{URLPattern: "*", RequestStage: proto.FetchRequestStageRequest}
	en := proto.FetchEnable{Patterns: []*proto.FetchRequestPattern{pat}}
	if !b.restricts() {
		pat.ResourceType = proto.NetworkResourceTypeDocument
		en.Patterns = append(en.Patterns, &proto.FetchRequestPattern{
			URLPattern: "*", ResourceType: proto.NetworkResourceTypeFetch, RequestStage: proto.FetchRequestStageRequest,
		})
	}
	if b.connectSrc() != "" {
		for _, rt := range cspTypes {
			en.Patterns = append(en.Patterns, &proto.FetchRequestPattern{
				URLPattern: "*", ResourceType: rt, RequestStage: proto.FetchRequestStageResponse,
			})
		}
	}
	return en
}

// release puts a task tab whose navigation was refused back on
// about:blank, so it shows neither the destination nor an error page the
// agent could read.
func (b *Browser) release(t *tab) {
	ctx, cancel := b.call(b.ctx)
	defer cancel()
	sid, err := b.attach(ctx, t)
	if err != nil {
		return
	}
	if _, err := (proto.PageNavigate{URL: "about:blank"}).Call(client{b: b, sid: sid, ctx: ctx}); err != nil {
		b.log.Debug("release tab", "err", err)
	}
}

func (b *Browser) decide(u, method string, hasBody, ws bool) policy.Decision {
	return b.opts.Policy.Decide(u, method, hasBody, ws)
}

func policyError(d policy.Decision) error {
	code := errcode.Code(d.Code)
	if code == "" {
		code = errcode.WebsiteBlocked
	}
	msg := d.Message
	if msg == "" {
		msg = "This website is not approved by your organization."
	}
	return &errcode.Error{Code: code, Message: msg}
}

// originOf is the exact origin scheme://host[:port] of an http(s) URL, with
// default ports dropped, as the consent engine keys grants.
func originOf(raw string) (string, bool) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" {
		return "", false
	}
	host := strings.ToLower(u.Hostname())
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	port := u.Port()
	if (u.Scheme == "http" && port == "80") || (u.Scheme == "https" && port == "443") {
		port = ""
	}
	if port != "" {
		host += ":" + port
	}
	return u.Scheme + "://" + host, true
}

// restricts reports whether managed policy has anything to say about
// requests.
func (b *Browser) restricts() bool {
	p := b.opts.Policy
	return p != nil && (p.Origins != nil || p.BlockUploads)
}
