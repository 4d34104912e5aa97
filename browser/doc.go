// Package browser is tabwarden's user of rod (with webmcp, whose site
// sessions it owns): it launches or attaches to Chromium, keeps the
// registry of tabs the console hands out, gives the agent a Handle per tab
// (observe, act, verify, upload, viewport, site tools; no rod type crosses
// it; it says itself how its tab ended and carries the agent's own state of
// the tab in a Slot) and runs the one request hook through which every
// request of every tab passes.
//
// Invariants:
//   - Chromium is the system's (Options.Chromium, TABWARDEN_CHROMIUM, PATH);
//     rod never downloads one. A launched Chromium runs under leakless in its
//     own process group, so it dies with the console even on a crash, and
//     Close kills the group and waits for it. The persistent profile is never
//     deleted.
//   - One browser-level Fetch domain, enabled before any task tab exists and
//     never disabled while the Browser lives, pauses requests at the Request
//     stage: every request under a managed policy that restricts origins or
//     uploads, documents only without one (a sub-resource then has no rule
//     to answer to). A request is continued only after managed policy
//     allows it and, for a task tab's main-frame document, after the
//     consent engine granted navigation to its origin for that tab.
//     Anything else is failed (BlockedByClient); the fixture server's
//     counters are the proof.
//   - WebSockets: Fetch never sees a handshake and Chromium 156 ignores
//     Network.setBlockedURLs for them (re-measured: it blocks http requests
//     on the same session, not ws:). So under such a policy the hook adds a
//     Content-Security-Policy connect-src to every document response
//     (fulfilled afresh; a header override at the Response stage is not
//     parsed for navigations) and worker script; see connectSrc. With
//     uploads blocked no ws:/wss: source is allowed at all.
//   - The second wall (package wall): a launched Chromium connects to
//     nothing but a loopback proxy of its own, which judges every
//     connection by managed policy before dialling it, whoever opened it
//     (renderer, service worker, browser process) — WebRTC kept off UDP.
//     Its process owns it; the navigation hold is the only server of ours
//     it lets through unjudged. The hook above stays for consent, review
//     timing and upload bodies; the build tag tabwarden_nohook (tests
//     only) turns the hook off to prove the wall alone.
//   - Uploads blocked: every page target is auto-attached and held until
//     its file chooser is intercepted; a chooser it opens is never
//     answered (no file can be picked) and the activity log says why.
//   - History (back, forward, reload) goes through the hook like Navigate.
//     Chromium runs with --disable-features=BackForwardCache (merged with
//     any --disable-features of Options.ExtraFlags), so going back always
//     issues a main-frame request the hook judges instead of restoring a
//     page from the cache behind its back.
//   - Take-over (consent EventTakeOver): the conversation's held
//     navigation questions are withdrawn and its tabs stop loading; while
//     paused, its agent calls fail paused and the hook lets the operator's
//     own navigation of those tabs through with no review and no grant —
//     policy still applies. After resume, grants are gone (the engine
//     revoked them), so the agent's next navigation asks again.
//   - Crash: a Browser is one object for the console's life. When a
//     launched Chromium dies, every tab becomes tab_closed (RemoveTab) and
//     ops fail browser_unavailable; the first op after the crash starts a
//     relaunch with the same options and profile (once the old
//     SingletonLock is stale) and fails too. The new connection is swapped
//     in behind the same *Browser, so callers never re-wire. The engine's
//     header (Info.Browser, when the Gatekeeper also has SetInfo and the
//     Browser is not Unshown) shows
//     "relaunching…", then "Chromium headed · <version>" (or headless). An
//     attached browser is attached again at once, with backoff, in a new
//     session (reattach.go); the tabs owned on the lost one are closed.
//   - Attach (--browser-url, attach.go): the token rides in Authorization
//     and no URL is shown with its query; the handshake has its own
//     deadline and says when the fleet queues; every byte on the socket
//     goes through cdpconn.go, so nothing an endpoint sends panics.
//   - Nothing blocks inside the CDP event loop: paused requests and consent
//     questions run on their own goroutines, tab activation on a coalescing
//     worker. Every CDP call carries a deadline.
//   - Tab ids are minted here and never reused; a closed tab stays known as
//     closed so its later use is tab_closed, never a silent replacement.
//   - Close ends every goroutine the Browser started before it returns.
//
// Decisions where design.md is silent:
//   - tab_limit (default 12) counts the live tabs of one conversation, popups
//     included; a popup beyond it is closed and noted in the activity log.
//   - A refused task-tab navigation (denied, timed out, policy) is answered
//     locally with 204 No Content, which aborts it without committing an
//     error page, and the tab is then put on about:blank ("released").
//     Operator tabs get Chromium's own blocked page instead.
//   - A page target nobody asked for is an operator tab, unless its opener
//     is a task tab (then it is that conversation's popup). While a NewTab
//     is between Target.createTarget and its answer, unknown opener-less
//     targets wait unclassified so ours is never mistaken for the operator's.
//   - Attach mode (--browser-url) cannot fail closed at the process level:
//     the Fetch domain lives only as long as our DevTools connection. Close
//     therefore closes the console's tabs before it disconnects; a crash of
//     the console itself leaves that Chromium's tabs unguarded.
package browser
