package browser

import (
	"github.com/go-rod/rod/lib/proto"
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
// blocked the Network domain of every target refuses them (DESIGN §8).
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
	ctx, cancel := b.call(nil)
	defer cancel()
	c := client{b: b, sid: e.SessionID, ctx: ctx}
	if err := (proto.NetworkEnable{}).Call(c); err != nil {
		b.log.Warn("guard target: network", "type", string(e.TargetInfo.Type), "err", err)
	} else if _, err := b.rod.Call(ctx, string(e.SessionID), "Network.setBlockedURLs", blockWebSockets); err != nil {
		b.log.Warn("guard target: block websockets", "err", err)
	}
	if e.TargetInfo.Type == proto.TargetTargetInfoTypePage {
		if err := (proto.PageSetInterceptFileChooserDialog{Enabled: true}).Call(c); err != nil {
			b.log.Warn("guard target: file chooser", "err", err)
		}
	}
	if e.WaitingForDebugger {
		if err := (proto.RuntimeRunIfWaitingForDebugger{}).Call(c); err != nil {
			b.log.Warn("guard target: release", "err", err)
		}
	}
}
