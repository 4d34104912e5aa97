// Package audit is the append-only JSONL audit log of design.md §9.
//
// Invariants: a record never holds page text, typed text, site-tool results
// or input values — only sizes, sha256 digests (Digest) and a redacted input
// summary (Summarize, which shows keys and types and never a value). Write
// returns only after the record is on disk (written and fsynced), so a
// decision is durable before the action it allows is dispatched. Records are
// never dropped and never coalesced: a write failure is returned to the
// caller, which must fail the operation closed.
//
// Files: Open(path) is for an explicit --audit FILE and writes that one file
// for the life of the process. Without --audit the console should use
// OpenDaily(DefaultDir()), which files each record under the local date of
// its own Time ($XDG_STATE_HOME/tabwarden/audit-YYYY-MM-DD.jsonl), so an
// operator looking for today's file finds today's records in it even when
// the console was started yesterday. Files are created 0600 in 0700
// directories and only ever appended to; a torn last line left by a crash is
// fenced off by a newline before the next record.
//
// Reading: Read and ReadFile return every parseable record and report torn
// or bad lines without failing the rest; RenderTable prints them for
// `tabwarden audit`. Memory is a Sink for tests of other packages.
package audit

import "time"

// Kind names what a record is about.
type Kind string

const (
	KindToolCall    Kind = "tool_call"
	KindReviewShown Kind = "review_shown"
	KindDecision    Kind = "decision"
	KindTakeOver    Kind = "take_over"
	KindResume      Kind = "resume"
	KindCancel      Kind = "cancel"
	KindRevoke      Kind = "revoke"
	KindMint        Kind = "mint"
	KindPolicyBlock Kind = "policy_block"
	KindKeyIgnored  Kind = "key_ignored"
	KindSession     Kind = "session"
	// A conversation frozen because its agent lost a batch submit's answer
	// (Note: the job id), and the operator's clear of it.
	KindFreeze        Kind = "freeze"
	KindFreezeCleared Kind = "freeze_cleared"
	// Where one run of the console (or demo) starts and stops in a log that
	// several runs append to (Note: what ran, its version and pid; the stop
	// record's Note says why it stopped).
	KindRunStart Kind = "run_start"
	KindRunStop  Kind = "run_stop"
	// Scoped grants (design.md §4): one given with `s` (Grant: its id; Note:
	// class, window and expiry), each step it covered instead of a review,
	// its revocation (Note: why; Operator when a person revoked it) and its
	// end at the close of its window.
	KindGrant        Kind = "grant"
	KindGrantUse     Kind = "grant_use"
	KindGrantRevoked Kind = "grant_revoke"
	KindGrantExpired Kind = "grant_expiry"
)

// Record is one line of the audit log. Omitted fields are left out of the JSON.
type Record struct {
	Time         time.Time `json:"time"`
	Kind         Kind      `json:"kind"`
	Conversation string    `json:"conversation,omitempty"`
	Client       string    `json:"client,omitempty"` // the conversation's display name (token · client · id)
	Tab          string    `json:"tab,omitempty"`
	Origin       string    `json:"origin,omitempty"`
	Gate         string    `json:"gate,omitempty"`
	Review       string    `json:"review,omitempty"` // review id
	ReviewKind   string    `json:"reviewKind,omitempty"`
	Decision     string    `json:"decision,omitempty"` // approved|denied|timeout|canceled|paused|revoked|needs_attention
	By           string    `json:"by,omitempty"`       // operator|engine|policy
	// Operator names who decided, took over or resumed: "local" for the
	// console's own terminal, else the comment of the SSH operator's key,
	// whose fingerprint (SHA256:…) is KeyFingerprint.
	Operator       string `json:"operator,omitempty"`
	KeyFingerprint string `json:"keyFingerprint,omitempty"`
	WaitMS         int64  `json:"waitMs,omitempty"` // how long the review waited
	Tool           string `json:"tool,omitempty"`   // MCP tool or site-tool name
	Action         string `json:"action,omitempty"` // act type
	Code           string `json:"code,omitempty"`   // design.md §5 code of a failure
	Input          string `json:"input,omitempty"`  // redacted input summary (Summarize)
	Size           int64  `json:"size,omitempty"`   // bytes of typed text / upload / result
	SHA256         string `json:"sha256,omitempty"` // digest of the same
	URL            string `json:"url,omitempty"`    // blocked request URL (origin+path, no query)
	Note           string `json:"note,omitempty"`
	// Grant is the scoped grant's id on its own records and on every
	// decision or step it covered.
	Grant string `json:"grant,omitempty"`
}

// Sink receives records. Write must not return before the record is durable.
type Sink interface {
	Write(Record) error
}
