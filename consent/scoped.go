package consent

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/tabwarden/tabwarden/consent/audit"
	"github.com/tabwarden/tabwarden/consent/errcode"
)

// Scoped grants: the grant ladder of design.md §4. On a read or action review
// the operator's `s` allows this class of step on this origin for this
// conversation for the grant window. A grant is memory only, lives in the
// engine beside the conversation it belongs to, and ends at the first of:
// its window, the operator's revoke (G), a take-over, a cancel (x), the end
// of the tab it was given in or of its conversation, a policy reload.

// DefaultGrantWindow is the grant window without --grant-window.
const DefaultGrantWindow = 15 * time.Minute

// MaxGrantWindow bounds --grant-window: a grant that outlives a working
// day is not "a while".
const MaxGrantWindow = 24 * time.Hour

// GrantClass is the class of step a scoped grant covers.
type GrantClass string

// The classes of design.md §4; a site tool's class is SiteToolClass(name).
const (
	ClassRead   GrantClass = "read"
	ClassScroll GrantClass = "scroll"
	ClassClick  GrantClass = "click"
	ClassSelect GrantClass = "select"
	ClassKey    GrantClass = "key"
	ClassFill   GrantClass = "fill"
	// ClassSiteTools, in GrantLimits.Grantable only, stands for every
	// site_tool:NAME class.
	ClassSiteTools GrantClass = "site_tool"
)

// SiteToolClass is the class of calls to the site tool name: one tool of
// the grant's origin.
func SiteToolClass(name string) GrantClass { return GrantClass("site_tool:" + name) }

// GrantLimits is what managed policy allows of scoped grants.
type GrantLimits struct {
	// MaxWindow caps every grant's window; zero sets no cap.
	MaxWindow time.Duration
	// Grantable lists the classes `s` may grant (ClassSiteTools for
	// every site tool). Nil allows every class; a non-nil empty list
	// turns scoped grants off.
	Grantable []GrantClass
}

// allows reports whether the limits let class c be granted.
func (l GrantLimits) allows(c GrantClass) bool {
	if l.Grantable == nil {
		return true
	}
	if slices.Contains(l.Grantable, c) {
		return true
	}
	return strings.HasPrefix(string(c), "site_tool:") && slices.Contains(l.Grantable, ClassSiteTools)
}

// ScopedGrant is one active grant as every screen shows it.
type ScopedGrant struct {
	ID               string
	Conversation     ConversationID
	ConversationName string
	Origin           string
	Class            GrantClass
	// Tab is the tab the grant was given in; its end revokes the grant.
	Tab     TabID
	Uses    int
	Granted time.Time
	Expires time.Time
	By      Operator
}

// ScopeOffer says, on a review panel, what `s` would allow before it is
// pressed, or why it would not.
type ScopeOffer struct {
	Class  GrantClass
	Window time.Duration
	// Refused is set when `s` does not apply to this step; Text then says
	// why (a never-grantable step, or managed policy).
	Refused bool
	Text    string
}

// NotGrantableError is DecideAs's answer to `s` on a step that cannot be
// granted for a while. Nothing was decided; the review stays on screen.
type NotGrantableError struct {
	Reason string
	// Approve is the panel's own a label (a navigation review's a is not
	// "once"); empty says a allows once.
	Approve string
}

func (e *NotGrantableError) Error() string {
	if e.Approve == "" {
		return "s refused: " + e.Reason + "; a allows once"
	}
	return "s refused: " + e.Reason + "; a: " + e.Approve
}

// ErrNoSuchGrant: RevokeGrant got an id that is not an active grant.
var ErrNoSuchGrant = fmt.Errorf("no such active grant")

// scopedGrant is a grant as the engine keeps it, guarded by Engine.mu.
type scopedGrant struct {
	ScopedGrant
	seq  uint64
	stop func() bool
}

// Pass is how a gated step was let through: by a review the operator
// answered, by a grant given earlier (Grant names a scoped grant; empty
// for a navigation, read, thread or session grant).
type Pass struct {
	Grant string
}

// paymentOrIdentity matches autocomplete tokens of fields whose values are
// payment or identity data (WHATWG autofill field names).
var paymentOrIdentity = regexp.MustCompile(`(?i)(^|\s)(cc-[a-z-]+|one-time-code|new-password|current-password|transaction-[a-z-]+|bday(-[a-z]+)?)(\s|$)`)

// paymentOrIdentityName matches a field's accessible name or name/id
// attribute that looks like the same data when the page set no
// autocomplete (most payment forms do not).
var paymentOrIdentityName = regexp.MustCompile(`(?i)(card.?(number|holder|no\b|num)|credit.?card|debit.?card|\bcvc\b|\bcvv|\bcsc\b|security.?code|expir(y|ation)|\biban\b|\bbic\b|swift|routing.?number|account.?number|sort.?code|\bssn\b|social.?security|passport|national.?id|tax.?(id|number)|driver.?s?.?licen[cs]e|date.?of.?birth|\bdob\b|password|passcode|\bpin\b|one.?time|\botp\b)`)

// sensitiveField reports whether the action's target looks like a payment
// or identity field.
func sensitiveField(a *Action) bool {
	if a == nil || (a.Type != ActionFill && a.Type != ActionSelect && a.Type != ActionKey) {
		return false
	}
	return paymentOrIdentity.MatchString(a.Autocomplete) ||
		paymentOrIdentityName.MatchString(a.Name) || paymentOrIdentityName.MatchString(a.Field)
}

// scopedClass is the class a grant would need to cover req, or why no
// grant can: the never-grantable list of design.md §4.
func scopedClass(req Request) (GrantClass, string) {
	switch req.Gate {
	case GateRead:
		return ClassRead, ""
	case GateNavigation:
		return "", "navigation asks per origin and tab"
	case GateDisclosure:
		return "", "results always ask before they are shared"
	}
	switch {
	case len(req.Plan) > 0:
		return "", "batch plans always ask"
	case req.Upload != nil:
		return "", "uploads always ask"
	case req.ToolCall != nil:
		return SiteToolClass(req.ToolCall.ToolName), ""
	case req.Action == nil:
		return "", "this step cannot be granted"
	case req.Action.CrossOrigin:
		return "", "cross-origin steps always ask"
	case sensitiveField(req.Action):
		return "", "fields that look like payment or identity data always ask"
	}
	switch req.Action.Type {
	case ActionClick:
		return ClassClick, ""
	case ActionFill:
		return ClassFill, ""
	case ActionSelect:
		return ClassSelect, ""
	case ActionKey:
		return ClassKey, ""
	case ActionScroll:
		return ClassScroll, ""
	}
	return "", "this step cannot be granted"
}

// classWords names a class's steps for the panel and the grants list.
func classWords(c GrantClass) string {
	switch c {
	case ClassRead:
		return "reading"
	case ClassScroll:
		return "every scroll"
	case ClassClick:
		return "every click"
	case ClassSelect:
		return "every option choice"
	case ClassKey:
		return "every key press"
	case ClassFill:
		return "every fill of an ordinary field"
	}
	if name, ok := strings.CutPrefix(string(c), "site_tool:"); ok {
		return "every call of site tool " + name
	}
	return string(c)
}

// windowLocked is the window a grant given now gets: --grant-window,
// capped by policy.
func (e *Engine) windowLocked() time.Duration {
	w := e.cfg.GrantWindow
	if m := e.limits.MaxWindow; m > 0 && m < w {
		w = m
	}
	return w
}

// offerLocked is what `s` would do on a review of kind for req; nil when
// the panel has no `s` (navigation, disclosure, thread and session panels).
func (e *Engine) offerLocked(kind ReviewKind, req Request, origin string) *ScopeOffer {
	switch kind {
	case KindRead, KindAction, KindPlan, KindUpload, KindToolCall:
	default:
		return nil
	}
	class, why := scopedClass(req)
	switch {
	case why != "":
		return &ScopeOffer{Refused: true, Text: why}
	case e.limits.Grantable != nil && len(e.limits.Grantable) == 0:
		return &ScopeOffer{Class: class, Refused: true, Text: "managed policy turns scoped grants off (execution.grantable: [])"}
	case !e.limits.allows(class):
		return &ScopeOffer{Class: class, Refused: true, Text: fmt.Sprintf("managed policy does not let %s be granted for a while (execution.grantable)", class)}
	}
	w := e.windowLocked()
	return &ScopeOffer{Class: class, Window: w,
		Text: fmt.Sprintf("%s on %s in this conversation, for %s", classWords(class), unicodeOrigin(origin), humanWindow(w))}
}

func humanWindow(d time.Duration) string {
	switch {
	case d%time.Hour == 0:
		return strconv.Itoa(int(d/time.Hour)) + " h"
	case d%time.Minute == 0:
		return strconv.Itoa(int(d/time.Minute)) + " min"
	}
	return d.Round(time.Second).String()
}

// scopedCoverLocked returns the live grant of c covering req at origin.
func (e *Engine) scopedCoverLocked(c *conv, req Request, origin string) *scopedGrant {
	class, why := scopedClass(req)
	if why != "" || !e.limits.allows(class) {
		return nil
	}
	now := e.now()
	for _, g := range e.scoped {
		if g.Conversation == c.id && g.Origin == origin && g.Class == class && now.Before(g.Expires) {
			return g
		}
	}
	return nil
}

// giveScopedLocked records the grant r's `s` asked for, by op.
func (e *Engine) giveScopedLocked(r *review, op Operator) *scopedGrant {
	class, why := scopedClass(r.req)
	if why != "" || !e.limits.allows(class) {
		return nil
	}
	if g := e.scopedCoverLocked(r.conv, r.req, r.origin); g != nil {
		return g // a racing `s` on a twin review already gave it
	}
	e.seq++
	now := e.now()
	w := e.windowLocked()
	g := &scopedGrant{seq: e.seq, ScopedGrant: ScopedGrant{
		ID: "g" + e.run + "-" + strconv.FormatUint(e.seq, 10), Conversation: r.conv.id, ConversationName: r.conv.name,
		Origin: r.origin, Class: class, Tab: r.Tab, Granted: now, Expires: now.Add(w), By: op,
	}}
	e.scoped[g.ID] = g
	id := g.ID
	g.stop = e.afterFunc(w, func() { e.expireGrant(id) })
	rec := withOperator(audit.Record{Kind: audit.KindGrant, Conversation: string(g.Conversation), Tab: string(g.Tab),
		Origin: g.Origin, Gate: string(r.Gate), Review: r.ID, Grant: g.ID, By: "operator",
		Note: fmt.Sprintf("class %s for %s, until %s", class, humanWindow(w), g.Expires.UTC().Format(time.RFC3339))}, op)
	e.auditLocked(rec)
	e.addActivityLocked(g.Conversation, fmt.Sprintf("grant %s by %s: %s on %s for %s", g.ID, op.orLocal().Name, classWords(class), g.Origin, humanWindow(w)), false)
	return g
}

// useScopedLocked notes one step g covered: audited with the grant's id
// (flushed before the step runs) and shown in the activity log. A record
// that cannot be written fails the step closed.
func (e *Engine) useScopedLocked(g *scopedGrant, req Request, origin string, review string) error {
	g.Uses++
	rec := requestRecord(audit.KindGrantUse, req, origin)
	rec.Review = review
	rec.Grant = g.ID
	rec.Decision = "approved"
	rec.By = "grant"
	if err := e.writeAuditLocked(rec); err != nil {
		return &errcode.Error{Code: errcode.BrowserOperationFailed, Message: "the step could not be written to the audit log: " + err.Error()}
	}
	e.addActivityLocked(g.Conversation, fmt.Sprintf("grant %s covered: %s %s (tab %s)", g.ID, describeKind(kindForLine(req), req), origin, req.Tab), false)
	return nil
}

// kindForLine is the base panel kind of req for an activity line.
func kindForLine(req Request) ReviewKind {
	k, _ := baseKind(req)
	return k
}

// revokeScopedLocked ends every grant match selects, saying why; by is
// the operator who revoked, zero for the engine's own revocations.
func (e *Engine) revokeScopedLocked(match func(*scopedGrant) bool, why string, by Operator) int {
	var gone []*scopedGrant
	for _, g := range e.scoped {
		if match(g) {
			gone = append(gone, g)
		}
	}
	sort.Slice(gone, func(i, j int) bool { return gone[i].seq < gone[j].seq })
	for _, g := range gone {
		delete(e.scoped, g.ID)
		if g.stop != nil {
			g.stop()
		}
		rec := audit.Record{Kind: audit.KindGrantRevoked, Conversation: string(g.Conversation), Tab: string(g.Tab),
			Origin: g.Origin, Grant: g.ID, Decision: "revoked", By: "engine", Note: fmt.Sprintf("class %s, %d use(s): %s", g.Class, g.Uses, why)}
		line := fmt.Sprintf("grant %s revoked (%s on %s): %s", g.ID, classWords(g.Class), g.Origin, why)
		if by.Name != "" {
			rec = withOperator(rec, by)
			rec.By = "operator"
			line = fmt.Sprintf("grant %s revoked by %s (%s on %s)", g.ID, by.Name, classWords(g.Class), g.Origin)
		}
		e.auditLocked(rec)
		e.addActivityLocked(g.Conversation, line, false)
	}
	return len(gone)
}

func (e *Engine) revokeConvScopedLocked(id ConversationID, why string) {
	e.revokeScopedLocked(func(g *scopedGrant) bool { return g.Conversation == id }, why, Operator{})
}

// expireGrant ends grant id at the close of its window.
func (e *Engine) expireGrant(id string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	g := e.scoped[id]
	if g == nil || e.closed {
		return
	}
	delete(e.scoped, id)
	e.auditLocked(audit.Record{Kind: audit.KindGrantExpired, Conversation: string(g.Conversation), Tab: string(g.Tab),
		Origin: g.Origin, Grant: g.ID, Decision: "expired", By: "engine", Note: fmt.Sprintf("class %s, %d use(s)", g.Class, g.Uses)})
	e.addActivityLocked(g.Conversation, fmt.Sprintf("grant %s ended: its window is over (%s on %s)", g.ID, classWords(g.Class), g.Origin), false)
	e.commitLocked()
}

// RevokeGrant ends grant id on the operator's word (G on any screen).
func (e *Engine) RevokeGrant(id string, by Operator) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.scoped[id] == nil {
		return ErrNoSuchGrant
	}
	e.revokeScopedLocked(func(g *scopedGrant) bool { return g.ID == id }, "revoked by the operator", by.orLocal())
	e.commitLocked()
	return nil
}

// SetGrantLimits applies a reloaded managed policy's limits. Every scoped
// grant is revoked (a grant was given under the old policy) and the `s`
// offers of pending reviews are worked out again.
func (e *Engine) SetGrantLimits(l GrantLimits) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.limits = l
	e.revokeScopedLocked(func(*scopedGrant) bool { return true }, "managed policy reloaded", Operator{})
	for _, r := range e.queue {
		r.Scope = e.offerLocked(r.Kind, r.req, r.origin)
	}
	e.addActivityLocked("", "managed policy reloaded: scoped grants revoked", true)
	e.commitLocked()
}

// GrantWindow is the window a grant given now would get (after policy).
func (e *Engine) GrantWindow() time.Duration {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.windowLocked()
}

// scopedSnapshotLocked lists the live grants, oldest first.
func (e *Engine) scopedSnapshotLocked() []ScopedGrant {
	now := e.now()
	var gs []*scopedGrant
	for _, g := range e.scoped {
		if now.Before(g.Expires) {
			gs = append(gs, g)
		}
	}
	sort.Slice(gs, func(i, j int) bool { return gs[i].seq < gs[j].seq })
	out := make([]ScopedGrant, len(gs))
	for i, g := range gs {
		out[i] = g.ScopedGrant
		if c, ok := e.convs[g.Conversation]; ok {
			out[i].ConversationName = c.name
		}
	}
	return out
}

// requestRecord is the audit record of a step: sizes and digests only.
func requestRecord(kind audit.Kind, req Request, origin string) audit.Record {
	rec := audit.Record{
		Kind:         kind,
		Conversation: string(req.Conversation),
		Tab:          string(req.Tab),
		Origin:       origin,
		Gate:         string(req.Gate),
	}
	switch {
	case req.Action != nil:
		rec.Action = string(req.Action.Type)
		if req.Action.Text != "" {
			rec.Size = int64(len(req.Action.Text))
			rec.SHA256 = digest(req.Action.Text)
		}
	case len(req.Plan) > 0:
		rec.Action = "plan"
		rec.Note = fmt.Sprintf("%d actions", len(req.Plan))
	case req.Upload != nil:
		rec.Action = "upload"
		rec.Size = req.Upload.Size
		rec.SHA256 = req.Upload.SHA256
	case req.ToolCall != nil:
		rec.Tool = req.ToolCall.ToolName
		rec.Input = req.ToolCall.InputSummary
	case req.Disclosure != nil:
		rec.Tool = req.Disclosure.ToolName
		rec.Size = int64(req.Disclosure.Size)
		rec.SHA256 = req.Disclosure.SHA256
	}
	return rec
}
