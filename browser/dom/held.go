package dom

import "github.com/tabwarden/tabwarden/consent"

// held is an observation waiting at a gate for one prepared input (an action
// or an upload). Its clock is stopped until exactly one of release or claim
// ends the wait, so review time never ages it.
type held struct {
	tab  *Tab
	obs  *observation
	done bool
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
		return consent.Errorf(consent.CodeStaleObservation, consent.NextObserve, "observation %s is stale: an action already used it", h.obs.id)
	}
	return nil
}
