package browser

import (
	"encoding/base64"
	"strings"

	"github.com/go-rod/rod/lib/proto"

	"github.com/tabwarden/tabwarden/consent"
	"github.com/tabwarden/tabwarden/policy"
)

// setBlockedURLs is Network.setBlockedURLs as Chromium ≥ 140 speaks it:
// urlPatterns (URLPattern syntax) next to the deprecated wildcard urls,
// which rod v0.116's proto type alone still carries.
type setBlockedURLs struct {
	URLPatterns []blockPattern `json:"urlPatterns"`
	URLs        []string       `json:"urls"`
}

type blockPattern struct {
	URLPattern string `json:"urlPattern"`
	Block      bool   `json:"block"`
}

// blockWebSockets: Fetch never sees a WebSocket handshake, so with uploads
// blocked the Network domain of every target refuses them (design.md §8).
var blockWebSockets = setBlockedURLs{
	URLPatterns: []blockPattern{{"ws://*:*/*", true}, {"wss://*:*/*", true}},
	URLs:        []string{"ws://*", "wss://*"},
}

// blocksUploads reports whether managed policy blocks browser uploads.
func (b *Browser) blocksUploads() bool {
	return b.opts.Policy != nil && b.opts.Policy.BlockUploads
}

// guardTarget runs for each target Chromium auto-attached (only when
// uploads are blocked): WebSockets are blocked and file choosers
// intercepted (and never answered, so no file is ever picked) before the
// target runs its first script; only then is it released from
// waitForDebuggerOnStart. A failure still releases it: the Fetch hook keeps
// refusing bodies and non-GET methods either way.
func (b *Browser) guardTarget(e *proto.TargetAttachedToTarget) {
	ctx, cancel := b.call(b.ctx)
	defer cancel()
	c := client{b: b, sid: e.SessionID, ctx: ctx}
	if !hookOn {
		// The test build without the hook: no block list either.
	} else if err := (proto.NetworkEnable{}).Call(c); err != nil {
		b.log.Warn("guard target: network", "type", string(e.TargetInfo.Type), "err", err)
	} else if _, err := b.rod().Call(ctx, string(e.SessionID), "Network.setBlockedURLs", blockWebSockets); err != nil {
		b.log.Warn("guard target: block websockets", "err", err)
	}
	if e.TargetInfo.Type == proto.TargetTargetInfoTypePage {
		b.reg.mu.Lock()
		b.reg.guarded[e.SessionID] = e.TargetInfo.TargetID
		b.reg.mu.Unlock()
		// Page.fileChooserOpened comes only with the Page domain on.
		err := proto.PageEnable{}.Call(c)
		if err == nil {
			err = proto.PageSetInterceptFileChooserDialog{Enabled: true}.Call(c)
		}
		if err != nil {
			b.log.Warn("guard target: file chooser", "err", err)
		}
	}
	if e.WaitingForDebugger {
		if err := (proto.RuntimeRunIfWaitingForDebugger{}).Call(c); err != nil {
			b.log.Warn("guard target: release", "err", err)
		}
	}
}

// onFileChooser runs on the event loop when a guarded page opened a file
// chooser. The chooser is intercepted, so the operator never sees a
// dialog, and it is never answered with a file: nothing can be picked.
// The conversation (or the operator's activity log) hears why.
func (b *Browser) onFileChooser(sid proto.TargetSessionID) {
	b.reg.mu.Lock()
	var conv consent.ConversationID
	if t := b.reg.byTarget[b.reg.guarded[sid]]; t != nil {
		conv = t.conv
	}
	b.reg.mu.Unlock()
	b.gate.Note(conv, policy.MsgUploadBlocked, true)
}

// cspTypes are the responses that carry a policy for the scripts they
// run: documents (pages and frames) and worker scripts, which Chromium
// loads as "Other". A header on any other response would mean nothing.
var cspTypes = []proto.NetworkResourceType{proto.NetworkResourceTypeDocument, proto.NetworkResourceTypeOther}

// connectSrc is the Content-Security-Policy the hook adds to every
// document and worker response when managed policy restricts WebSockets,
// "" when it does not.
//
// Why a header: Chromium 156 lets WebSocket handshakes through
// Network.setBlockedURLs (urls and urlPatterns alike, set with the
// Network domain enabled on the target before its first script; it does
// block http requests that way), and Fetch never pauses a handshake. CSP
// connect-src is enforced for WebSocket by the renderer, and policies only
// add up: the site's own CSP can narrow ours, never widen it. Scheme and
// host sources with an http(s) scheme never match ws:/wss:, and 'self' is
// left out because CSP3 lets it match ws: on the same host.
//
//   - uploads blocked: "connect-src http: https: blob: data:" — every
//     fetch as before (the Request stage judges methods, bodies and
//     origins), no WebSocket at all;
//   - browserOrigins alone: the same plus the ws:/wss: twins of the
//     allowed origins, so a WebSocket reaches only those.
//
// A worker whose script the hook did not see (a service worker's update
// check served from its own cache) is outside this; the Request stage
// still fails everything else such a worker sends.
func (b *Browser) connectSrc() string {
	if !b.restricts() {
		return ""
	}
	p := b.opts.Policy
	// Every http(s) fetch stays allowed here: the Request stage judges it
	// (and counts it for "This page may be incomplete…"). The policy is
	// only about WebSockets.
	src := []string{"http:", "https:"}
	if !p.BlockUploads {
		for _, o := range p.Origins {
			src = append(src, "ws"+strings.TrimPrefix(o, "http"))
		}
	}
	src = append(src, "blob:", "data:")
	return "connect-src " + strings.Join(src, " ")
}

// onResponse adds connectSrc's policy to a paused document or worker
// response. A worker's script takes it through Fetch.continueResponse. A
// document does not: Chromium parses a navigation's policies before the
// override is applied (measured on 156: the page ignored even
// connect-src 'none'), so its response is fulfilled afresh — same status,
// headers and body plus the policy — which Chromium parses in full. A
// redirect commits nothing and goes on unchanged; its target is paused in
// turn. Whatever cannot carry the policy is failed, never let through.
func (b *Browser) onResponse(e *proto.FetchRequestPaused) {
	ctx, cancel := b.call(b.ctx)
	defer cancel()
	br := b.rod().Context(ctx)
	csp := b.connectSrc()
	status := 0
	if e.ResponseStatusCode != nil {
		status = *e.ResponseStatusCode
	}
	if e.ResponseErrorReason != "" || csp == "" || (status >= 300 && status < 400) {
		if err := (proto.FetchContinueRequest{RequestID: e.RequestID}).Call(br); err != nil {
			b.log.Debug("continue response", "err", err)
		}
		return
	}
	headers := []*proto.FetchHeaderEntry{{Name: "Content-Security-Policy", Value: csp}}
	if e.ResourceType != proto.NetworkResourceTypeDocument {
		headers = append(headers, e.ResponseHeaders...)
		// Chromium takes headers only together with the status.
		err := proto.FetchContinueResponse{RequestID: e.RequestID, ResponseCode: e.ResponseStatusCode,
			ResponsePhrase: e.ResponseStatusText, ResponseHeaders: headers}.Call(br)
		if err != nil {
			b.log.Debug("add connect-src", "err", err)
			b.fail(e)
		}
		return
	}
	body, err := proto.FetchGetResponseBody{RequestID: e.RequestID}.Call(br)
	if err != nil {
		b.log.Debug("read document for connect-src", "err", err)
		b.fail(e)
		return
	}
	data := []byte(body.Body)
	if body.Base64Encoded {
		if data, err = base64.StdEncoding.DecodeString(body.Body); err != nil {
			b.fail(e)
			return
		}
	}
	for _, h := range e.ResponseHeaders {
		switch strings.ToLower(h.Name) {
		case "content-encoding", "content-length", "transfer-encoding":
			// The body above is decoded and whole.
		default:
			headers = append(headers, h)
		}
	}
	err = proto.FetchFulfillRequest{RequestID: e.RequestID, ResponseCode: status,
		ResponsePhrase: e.ResponseStatusText, ResponseHeaders: headers, Body: data}.Call(br)
	if err != nil {
		b.log.Debug("fulfill document with connect-src", "err", err)
		b.fail(e)
	}
}
