package main

import (
	"context"
	"log/slog"

	"github.com/tabwarden/tabwarden/browser"
	"github.com/tabwarden/tabwarden/consent"
)

// markReviews keeps the target of the action review on the console's
// screen marked in its tab (design.md §4, §13): a CDP Overlay highlight, so
// the headed window shows it and so does every page view's picture, and
// the page's DOM never changes. The mark follows the focused review and
// goes when it leaves the screen. It runs until ctx ends.
func markReviews(ctx context.Context, eng *consent.Engine, br *browser.Browser) {
	ch, unsub := eng.Changes()
	defer unsub()
	defer br.ClearMark()
	var cur browser.Mark
	for {
		if want := markOf(eng.Snapshot().Focused); want != cur {
			if err := br.MarkTarget(ctx, want); err != nil {
				slog.Debug("mark the review's target", "err", err)
			}
			cur = want
		}
		select {
		case <-ctx.Done():
			return
		case _, ok := <-ch:
			if !ok {
				return
			}
		}
	}
}

// markOf is what review r marks: an action's target box, or its point for
// a coordinate click; nothing for any other review.
func markOf(r *consent.Review) browser.Mark {
	if r == nil || r.Kind != consent.KindAction || r.Action == nil {
		return browser.Mark{}
	}
	switch a := r.Action; {
	case a.Box != nil:
		return browser.Mark{Tab: r.Tab, X: a.Box[0], Y: a.Box[1], W: a.Box[2], H: a.Box[3]}
	case a.Coordinate:
		return browser.Mark{Tab: r.Tab, X: a.X, Y: a.Y}
	}
	return browser.Mark{}
}
