package agent

import "github.com/tabwarden/tabwarden/browser"

// The dispatch drives the real engine; browser cannot import agent, so the
// promise is kept here.
var _ Browser = (*browser.Browser)(nil)
