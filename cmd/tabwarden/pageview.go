package main

import (
	"context"
	"image"
	"log/slog"

	"github.com/tabwarden/tabwarden/browser"
	"github.com/tabwarden/tabwarden/consent"
	"github.com/tabwarden/tabwarden/tui"
)

// markReviews keeps the target of the action review on the console's
// screen marked in its tab (design.md §4, §13): a CDP Overlay highlight, so
// the headed window shows it and so does every page view's picture, and
// the page's DOM never changes. The mark follows the focused review and
// goes when it leaves the screen. It runs until ctx ends. A review of a
// tab br does not own (the demo's second browser) is another marker's.
func markReviews(ctx context.Context, eng *consent.Engine, br *browser.Browser) {
	ch, unsub := eng.Changes()
	defer unsub()
	defer br.ClearMark()
	var cur browser.Mark
	for {
		want := markOf(eng.Snapshot().Focused)
		if _, err := br.Tab(want.Tab); want.Tab != "" && err != nil {
			want = browser.Mark{}
		}
		if want != cur {
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

// pageSources is the page view's browser side over one browser (the
// console's) or several (the demo's agent browser and its policy run's):
// each tab's calls go to the browser that owns it.
type pageSources []*browser.Browser

func (ps pageSources) owner(tab consent.TabID) *browser.Browser {
	for _, b := range ps {
		if _, err := b.Tab(tab); err == nil {
			return b
		}
	}
	return ps[0] // its error names the closed tab
}

func (ps pageSources) PageFrames(ctx context.Context, tab consent.TabID, maxW, maxH int, deliver func(img image.Image, cssW, cssH float64)) error {
	return ps.owner(tab).PageFrames(ctx, tab, maxW, maxH, deliver)
}

func (ps pageSources) PageKey(ctx context.Context, tab consent.TabID, key, text string) error {
	return ps.owner(tab).PageKey(ctx, tab, key, text)
}

func (ps pageSources) PageClick(ctx context.Context, tab consent.TabID, x, y float64) error {
	return ps.owner(tab).PageClick(ctx, tab, x, y)
}

func (ps pageSources) PageText(ctx context.Context, tab consent.TabID) ([]string, error) {
	return ps.owner(tab).PageText(ctx, tab)
}

func (ps pageSources) PageFocus(ctx context.Context, tab consent.TabID) (tui.PageFocus, error) {
	f, err := ps.owner(tab).PageFocus(ctx, tab)
	return tui.PageFocus{Label: f.Label(), Box: f.Box, HasBox: f.HasBox}, err
}
