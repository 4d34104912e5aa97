// Package cdpedge is the console's edge to Chromium's DevTools protocol:
// the one table of deadlines every call into Chromium runs under, and the
// one mapping of a failed call onto a design.md §5 code. browser, its dom
// part, webmcp and agent all take both from here, so a deadline is set in
// one place and a CDP error reads the same whichever package met it.
package cdpedge

import "time"

// Deadlines of the console's calls into Chromium. Chromium answers a
// command in milliseconds; these bounds only keep a wedged browser from
// wedging the console, so they are generous.
const (
	// Call bounds one CDP command (and a short run of them on one page)
	// whose caller's context has no earlier deadline.
	Call = 10 * time.Second
	// Launch bounds starting Chromium until its DevTools endpoint answers.
	Launch = 30 * time.Second
	// Close is how long closing a tab or Chromium waits before giving up
	// on a clean end.
	Close = 3 * time.Second
	// Release bounds closing the tab of a failed open, after the
	// operation's own context may have ended.
	Release = 10 * time.Second
	// Load bounds how long a navigation waits for a committed page's load
	// event before it returns anyway.
	Load = 15 * time.Second
	// SiteAttach bounds attaching a new tab's site tools.
	SiteAttach = 10 * time.Second
	// SiteExec is how long a site tool may run in the page by default.
	SiteExec = 60 * time.Second
)
