// Package dom is tabwarden's eyes and hands on one page: it observes the
// page (design.md §6), resolves and dispatches the actions of design.md §5 and
// checks the verify assertions. The tab registry holds one *Tab per tab;
// the consent gates wrap Tab's calls, they are not here.
//
// The gate layer's sequence for an act is
//
//	p, err := tab.Prepare(ctx, observationID, action) // validate; p.Target for the review
//	// ... the review waits for the operator, then either
//	p.Release()                     // denied or cancelled: nothing consumed, or
//	receipt, err := p.Dispatch(ctx) // approved: re-check, consume, send input
//
// and for observe and verify simply tab.Observe / tab.Verify.
//
// Invariants:
//   - Nothing runs in the page's main world. Every script runs in one
//     isolated world of the top frame (Page.createIsolatedWorld, name
//     "tabwarden"); same-origin frames and open shadow roots are walked from
//     there, so page scripts cannot see our globals, listeners or observers.
//   - Refs are never written into the page: the isolated world keeps a
//     WeakMap element→ref and a Map ref→WeakRef. That global lives exactly
//     as long as the document, so a ref is stable within a document and
//     dead after navigation (stale_element / stale_observation).
//   - An observation expires after Lifetime (15 s), on any DOM mutation
//     (a MutationObserver in the isolated world bumps a counter), on
//     navigation (a new document has a new world token), on scroll and on a
//     viewport change, and is consumed by the first Dispatch that uses it.
//     Expiry is checked against the page when it matters (Prepare, Dispatch,
//     cursor paging), so no CDP event callback is needed and none blocks.
//   - Review wait time does not age an observation: Prepare stops its clock
//     and Dispatch or Release restarts it. The gate layer needs no other call.
//   - Input reaches the page only as CDP Input events (mouse, key,
//     insertText), except select, which sets the option and fires
//     input/change from the isolated world as a user's choice would.
//   - Once input may have reached the page, every failure reports
//     Dispatched and MayHaveChangedState; nothing is ever retried.
//   - Every CDP call runs under a deadline (the caller's, capped at
//     cdpedge.Call). No rod Must* helper is used.
//   - The page text leaves out lines made only of element names and select
//     option labels (the element list carries them); the header counts
//     them. Verify's text assertions read the whole text.
//   - Closed shadow roots are found on custom elements only (CDP
//     DOM.describeNode on candidates); a closed root on a built-in element
//     is not reported as a region.
//   - The agent cursor is a CDP Overlay highlight (it shows in screenshots
//     and is invisible to page scripts), hidden ~600 ms after the click; a
//     failure to draw or hide it never changes an action's result.
package dom
