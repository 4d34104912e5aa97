package browser

import (
	"github.com/go-rod/rod/lib/proto"

	"github.com/tabwarden/tabwarden/consent"
)

// onConsentEvent runs on the engine's delivery path and must not block.
func (b *Browser) onConsentEvent(e consent.Event) {
	b.onHandleEvent(e)
	if e.Kind == consent.EventTakeOver {
		conv := e.Conversation
		// The engine already answered the held questions' reviews paused;
		// this withdraws what is still asking. An event delivered after
		// the operator resumed withdraws nothing: a question held now is
		// the agent's next navigation, which asks anew.
		if b.gate.Paused(conv) {
			b.cancelHeld(conv)
		}
		b.spawn(func() { b.takeOver(conv) })
		return
	}
	if e.Kind == consent.EventCloseTabs {
		b.closeEnded(e.Tabs)
		return
	}
	if e.Kind != consent.EventSelect || e.Tab == "" {
		return
	}
	b.reg.mu.Lock()
	b.reg.front = e.Tab
	b.reg.mu.Unlock()
	select {
	case b.activate <- struct{}{}:
	default: // a wake-up is pending; it will read the newest front
	}
}

// activationWorker brings the selected tab to front. Selections coalesce:
// only the newest matters to the operator.
func (b *Browser) activationWorker() {
	defer b.wg.Done()
	for {
		select {
		case <-b.ctx.Done():
			return
		case <-b.activate:
		}
		b.reg.mu.Lock()
		t := b.reg.byID[b.reg.front]
		var target proto.TargetTargetID
		if t != nil && !t.closed {
			target = t.target
		}
		b.reg.mu.Unlock()
		if target == "" {
			continue
		}
		ctx, cancel := b.call(b.ctx)
		if err := (proto.TargetActivateTarget{TargetID: target}).Call(b.rod().Context(ctx)); err != nil {
			b.log.Warn("bring tab to front", "target", string(target), "err", err)
		}
		cancel()
	}
}
