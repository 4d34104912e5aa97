// Package browser is tabwarden's only user of rod: it launches or attaches
// to Chromium, keeps the registry of tabs the console hands out, and runs
// the one request hook through which every request of every tab passes.
//
// Invariants:
//   - Chromium is the system's (Options.Chromium, TABWARDEN_CHROMIUM, PATH);
//     rod never downloads one. A launched Chromium runs under leakless in its
//     own process group, so it dies with the console even on a crash, and
//     Close kills the group and waits for it. The persistent profile is never
//     deleted.
//   - One browser-level Fetch domain, enabled before any task tab exists and
//     never disabled while the Browser lives, pauses every request at the
//     Request stage. A request is continued only after managed policy allows
//     it and, for a task tab's main-frame document, after the consent engine
//     granted navigation to its origin for that tab. Anything else is failed
//     (BlockedByClient); the fixture server's counters are the proof.
//   - Nothing blocks inside the CDP event loop: paused requests and consent
//     questions run on their own goroutines, tab activation on a coalescing
//     worker. Every CDP call carries a deadline.
//   - Tab ids are minted here and never reused; a closed tab stays known as
//     closed so its later use is tab_closed, never a silent replacement.
//   - Close ends every goroutine the Browser started before it returns.
//
// Decisions where DESIGN is silent:
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
