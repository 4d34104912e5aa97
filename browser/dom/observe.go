package dom

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/tabwarden/tabwarden/browser/cdpedge"
	"github.com/tabwarden/tabwarden/consent/errcode"
)

// Observe reads the page (design.md §6). Errors carry design.md §5 codes:
// sign_in_required when an image is asked for while a password or
// one-time-code field is rendered anywhere in the document (not only in the
// viewport), invalid_action for bad arguments. A cursor continues the
// cursor's observation under the same id while it is fresh; once stale, the
// same offsets are served from a new observation (a note says so). A since
// whose base is unknown or of another document gives a full listing with a
// note instead of an error. A document's first observation, unless
// textChars is given, carries a FirstLookTextChars digest of the text instead
// of a DefaultTextChars page (design.md §6: the first observation is kept
// small); the header says what it left out and the cursor continues it.
func (t *Tab) Observe(ctx context.Context, req ObserveRequest) (*Observation, error) {
	textChars := req.TextChars
	defaulted := textChars == 0
	switch {
	case textChars < 0:
		return nil, errcode.Errorf(errcode.InvalidAction, errcode.NextNone, "textChars must be between 0 and %d", MaxTextChars)
	case textChars == 0:
		textChars = DefaultTextChars
	case textChars > MaxTextChars:
		textChars = MaxTextChars
	}
	if req.Cursor != "" && req.Since != "" {
		return nil, errcode.Errorf(errcode.InvalidAction, errcode.NextNone, "cursor and since cannot be combined")
	}
	var notes []string
	elemOff, textOff := 0, 0
	if req.Cursor != "" {
		id, eo, to, ok := parseCursor(req.Cursor)
		if !ok {
			return nil, errcode.Errorf(errcode.InvalidAction, errcode.NextNone, "malformed cursor %q", req.Cursor)
		}
		elemOff, textOff = eo, to
		t.mu.Lock()
		base := t.obs[id]
		t.mu.Unlock()
		if base != nil {
			if err := t.checkFresh(ctx, base); err == nil {
				if req.IncludeImage && base.image == nil {
					notes = append(notes, "no image on a cursor page; observe without cursor for one")
				}
				return t.render(base, nil, elemOff, textOff, textChars, false, notes, base.image), nil
			} else if errcode.Of(err) != errcode.StaleObservation {
				return nil, err
			}
		}
		notes = append(notes, "the page changed since that cursor was issued; this is a new observation at the same offsets")
	}
	t.mu.Lock()
	lastDoc := t.snap.token
	t.mu.Unlock()
	o, sensitive, err := t.snapshot(ctx)
	if err != nil {
		return nil, cdpedge.Failed(ctx, "observe", err)
	}
	var img []byte
	if req.IncludeImage {
		if sensitive {
			return nil, errcode.Errorf(errcode.SignInRequired, errcode.NextNone,
				"a password or one-time-code field is visible; no image is taken. Ask the operator to take over (browser_handoff) for sign-in")
		}
		img, o.clip, err = t.capture(ctx, o.state.DPR)
		if err != nil {
			return nil, cdpedge.Failed(ctx, "observe image", err)
		}
		o.image = img
	}
	t.store(o)
	var diff *observation
	if req.Since != "" {
		t.mu.Lock()
		base := t.obs[req.Since]
		t.mu.Unlock()
		switch {
		case base == nil:
			notes = append(notes, "since: that observation is unknown or too old; full listing")
		case base.state.Token != o.state.Token:
			notes = append(notes, "since: that observation was of another document; full listing")
		default:
			diff = base
		}
	}
	firstLook := defaulted && req.Cursor == "" && o.state.Token != lastDoc
	if firstLook {
		textChars = FirstLookTextChars
	}
	return t.render(o, diff, elemOff, textOff, textChars, firstLook, notes, img), nil
}

func (t *Tab) store(o *observation) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.obs[o.id] = o
	t.order = append(t.order, o.id)
	for len(t.order) > keepObservations {
		delete(t.obs, t.order[0])
		t.order = t.order[1:]
	}
}

// checkFresh returns stale_observation when o is past any expiry rule.
func (t *Tab) checkFresh(ctx context.Context, o *observation) error {
	t.mu.Lock()
	age := o.age(t.now())
	consumed, invalid := o.consumed, o.invalid
	t.mu.Unlock()
	stale := func(why string) error {
		return errcode.Errorf(errcode.StaleObservation, errcode.NextObserve, "observation %s is stale: %s", o.id, why)
	}
	switch {
	case invalid:
		return stale("the tab was taken over or reset")
	case consumed:
		return stale("an action already used it")
	case age >= t.lifetime:
		return stale(fmt.Sprintf("older than %s", t.lifetime))
	}
	s, err := t.state(ctx)
	if err != nil {
		return cdpedge.Failed(ctx, "check observation", err)
	}
	if why := o.state.changed(s); why != "" {
		return stale(why)
	}
	return nil
}

func parseCursor(c string) (id string, elemOff, textOff int, ok bool) {
	parts := strings.Split(c, ":")
	if len(parts) != 3 {
		return "", 0, 0, false
	}
	e, err1 := strconv.Atoi(parts[1])
	x, err2 := strconv.Atoi(parts[2])
	if err1 != nil || err2 != nil || e < 0 || x < 0 || parts[0] == "" {
		return "", 0, 0, false
	}
	return parts[0], e, x, true
}
