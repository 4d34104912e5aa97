// Package policy loads, validates, merges and applies managed policy
// (design.md §8): which websites the supervised browser may reach, whether it may
// send anything upstream, and how permissive the operator's consent profile
// may be.
//
// A policy file is JSON or YAML (YAML accepts the same keys):
//
//	{"execution": {
//	    "browserOrigins": ["https://a.example", "http://localhost:8080"],
//	    "blockBrowserUploads": true,
//	    "consentFloor": "thread"}}
//
// The keys, all optional:
//
//   - browserOrigins: at most 100 exact origins (http or https; no path other
//     than "/", no credentials, query or fragment). Absent means unrestricted;
//     [] means no website is allowed. An explicit null is an error rather than
//     "absent", because reading a forgotten list as "allow everything" would
//     fail open.
//   - blockBrowserUploads: when true, any request that could carry data
//     upstream is refused.
//   - consentFloor: tabwarden's addition to the reference shape. It names the
//     most permissive consent profile (strict < thread < trusted) the operator
//     may run; a more permissive --consent is lowered to it (the consent
//     engine applies it: consent.Config.Floor).
//   - maxGrantMinutes: the longest window, in whole minutes (1 to 1440), of
//     a scoped grant (the operator's `s`); a longer --grant-window is cut
//     to it.
//   - grantable: the step classes `s` may grant (read, scroll, click,
//     select, key, fill, site_tool for every site tool, site_tool:NAME for
//     one). Absent allows every class; [] turns scoped grants off. Uploads,
//     payment or identity fills, batch plans, cross-origin steps and
//     disclosures are never grantable whatever a policy says.
//
// Unknown or duplicated keys anywhere are errors, never ignored, so a typo
// cannot silently drop a restriction.
//
// Several files merge to the most restrictive reading: browserOrigins
// intersect (absent ∩ X = X), blockBrowserUploads is OR-ed, the strictest
// consentFloor wins, the shortest maxGrantMinutes wins and grantable lists
// intersect (site_tool ∩ site_tool:x = site_tool:x). No approval and no later file can widen what one file
// restricts.
//
// Invariants: a *Policy is immutable once returned by Parse, Merge or
// CheckFiles, so Decide may be called from any goroutine; a nil *Policy is
// "no managed policy" and allows everything. Decide treats about:blank,
// about:srcdoc, data: and blob: URLs as allowed even under a restrictive
// policy: they are produced inside the browser and reach no server. Any other
// URL that cannot be parsed to an http(s) origin is refused whenever
// browserOrigins is set (fail closed).
//
// The package is pure Go: it imports no browser, terminal or other tabwarden
// package, so its decision codes are plain strings equal to the design.md §5
// codes website_blocked and upload_blocked.
package policy
