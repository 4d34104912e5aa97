package stacktest

import (
	"context"

	"github.com/tabwarden/tabwarden/browser"
	"github.com/tabwarden/tabwarden/consent"
	"github.com/tabwarden/tabwarden/consent/errcode"
)

// GoneBrowser is an agent.Browser whose every tab has just closed: each
// call fails with a design.md §5 code at once, so a call never waits on
// Chromium or on an operator and every failure the dispatch returns is its
// own verdict on the arguments, or the browser's coded answer. For tests
// of the dispatch and the transports that need no page.
type GoneBrowser struct{}

func (GoneBrowser) NewTab(context.Context, consent.ConversationID, bool) (consent.TabID, error) {
	return "", errcode.Errorf(errcode.TabLimit, errcode.NextListTabs, "no tabs here")
}

func (GoneBrowser) Navigate(context.Context, consent.ConversationID, consent.TabID, string) error {
	return errcode.Errorf(errcode.TabClosed, errcode.NextListTabs, "closed")
}

func (GoneBrowser) History(context.Context, consent.ConversationID, consent.TabID, string) error {
	return errcode.Errorf(errcode.TabClosed, errcode.NextListTabs, "closed")
}

func (GoneBrowser) Tab(consent.TabID) (consent.TabInfo, error) {
	return consent.TabInfo{}, errcode.Errorf(errcode.TabClosed, errcode.NextListTabs, "closed")
}

func (GoneBrowser) CloseTab(context.Context, consent.ConversationID, consent.TabID) error {
	return errcode.Errorf(errcode.TabClosed, errcode.NextListTabs, "closed")
}

func (GoneBrowser) Handle(context.Context, consent.ConversationID, consent.TabID) (*browser.Handle, error) {
	return nil, errcode.Errorf(errcode.TabClosed, errcode.NextListTabs, "closed")
}

func (GoneBrowser) Available() error { return nil }
