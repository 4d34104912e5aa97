package dom

import (
	"context"

	"github.com/tabwarden/tabwarden/consent/errcode"
)

// held is an observation waiting at a gate for one prepared input (an action
// or an upload). Its clock is stopped until exactly one of release or claim
// ends the wait, so review time never ages it.
type held struct {
	tab  *Tab
	obs  *observation
	done bool
}

// freshObservation is a prepared input's first step: obsID's observation,
// as long as it is known and still matches the page.
func (t *Tab) freshObservation(ctx context.Context, obsID string) (*observation, error) {
	t.mu.Lock()
	o := t.obs[obsID]
	t.mu.Unlock()
	if o == nil {
		return nil, errcode.Errorf(errcode.StaleObservation, errcode.NextObserve, "unknown observation %q for this tab", obsID)
	}
	if err := t.checkFresh(ctx, o); err != nil {
		return nil, err
	}
	return o, nil
}

// hold stops o's clock for an input about to wait at its gate.
func (t *Tab) hold(o *observation) held {
	t.mu.Lock()
	o.freeze(t.now())
	t.mu.Unlock()
	return held{tab: t, obs: o}
}

// release ends the wait without using the observation (denied, cancelled).
func (h *held) release() {
	t := h.tab
	t.mu.Lock()
	defer t.mu.Unlock()
	if h.done {
		return
	}
	h.done = true
	h.obs.thaw(t.now())
}

// claim ends the wait to use the observation; it fails when the input was
// already used or released, or when another action consumed the observation.
// The caller still re-checks freshness against the page.
func (h *held) claim(what string) error {
	t := h.tab
	t.mu.Lock()
	defer t.mu.Unlock()
	if h.done {
		return invalid("this %s was already used or released", what)
	}
	h.done = true
	h.obs.thaw(t.now())
	if h.obs.consumed {
		return errcode.Errorf(errcode.StaleObservation, errcode.NextObserve, "observation %s is stale: an action already used it", h.obs.id)
	}
	return nil
}

// use is claim, then the page re-check, for an input about to be sent. The
// observation is consumed once claimed, fresh or not: one gate, one try.
func (h *held) use(ctx context.Context, what string) error {
	if err := h.claim(what); err != nil {
		return err
	}
	t := h.tab
	err := t.checkFresh(ctx, h.obs)
	t.mu.Lock()
	h.obs.consumed = true
	t.mu.Unlock()
	return err
}
