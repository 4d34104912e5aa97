package consent

import (
	"errors"
	"slices"
	"time"

	"github.com/tabwarden/tabwarden/consent/audit"
)

// Operator is who made a decision, take-over or resume (design.md §4, §11):
// the console's own terminal (LocalOperator) or an operator on an SSH
// screen, named by the comment of their verified key in the authorized
// keys file and identified by that key's fingerprint.
type Operator struct {
	Name        string
	Fingerprint string // SHA256:… of the verified key; empty for the local terminal
}

// LocalOperator is the console's own terminal.
var LocalOperator = Operator{Name: "local"}

func (o Operator) orLocal() Operator {
	if o.Name == "" {
		return LocalOperator
	}
	return o
}

// Decision is one operator's answer to a review.
type Decision struct {
	Review  string
	Approve bool
	By      Operator
	// SeenAt is when the review appeared on the deciding operator's own
	// screen (each screen renders a change at its own moment). The
	// key-ahead guard counts from the later of SeenAt and the moment the
	// engine put the review on screen; zero counts from the latter alone.
	SeenAt time.Time
	// Scoped asks for a scoped grant (`s`) instead of once: the review is
	// approved and, once its step passes the re-check, this class of step
	// on its origin in its conversation runs without a review for the
	// grant window. Only with Approve.
	Scoped bool
}

func withOperator(rec audit.Record, op Operator) audit.Record {
	rec.Operator = op.Name
	rec.KeyFingerprint = op.Fingerprint
	return rec
}

// Sentinel errors of the operator-facing API (Decide and friends). They are
// not agent-visible codes.
var (
	// ErrTooEarly: a decision arrived before the review had been on screen
	// for the review delay (the key-ahead guard). Nothing was decided.
	ErrTooEarly = errors.New("key ignored: review just appeared")
	// ErrNoSuchReview: the review is unknown or already resolved (first decision wins).
	ErrNoSuchReview = errors.New("no such pending review")
	// ErrNotShown: the review exists but is not the one on screen.
	ErrNotShown = errors.New("review is not on screen")
	// ErrUnknownConversation: no conversation with that id.
	ErrUnknownConversation = errors.New("unknown conversation")
)

// OperatorJoined records that op's SSH screen came up: every screen's
// activity log and the audit log (a session record with the operator and
// key) say who is watching.
func (e *Engine) OperatorJoined(op Operator) {
	e.operatorSession(op, +1, "joined", "joined over SSH")
}

// OperatorLeft records that op's SSH screen went away; why says how
// ("left", "signed out after 15m0s without input", …).
func (e *Engine) OperatorLeft(op Operator, why string) {
	e.operatorSession(op, -1, why, why)
}

// operatorSession records op's screen coming (screens +1) or going (-1).
func (e *Engine) operatorSession(op Operator, screens int, note, line string) {
	op = op.orLocal()
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.screens == nil {
		e.screens = map[string]int{}
	}
	if e.screens[op.Name] += screens; e.screens[op.Name] <= 0 {
		delete(e.screens, op.Name)
	}
	e.auditLocked(withOperator(audit.Record{Kind: audit.KindSession, By: "operator", Note: "ssh screen: " + note}, op))
	e.addActivityLocked("", "operator "+op.Name+" "+line, false)
	e.commitLocked()
}

// operatorsLocked lists the operators on SSH screens, one entry per screen.
func (e *Engine) operatorsLocked() []string {
	var out []string
	for name, n := range e.screens {
		for range n {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}
