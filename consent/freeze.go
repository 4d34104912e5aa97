package consent

import (
	"time"

	"github.com/tabwarden/tabwarden/consent/audit"
	"github.com/tabwarden/tabwarden/consent/errcode"
)

// Freeze is why a conversation is frozen: a browser_batch submit whose
// client went away after the operator approved the plan and job Job
// started, so the agent cannot know whether its plan runs. The console
// knows; the agent does not, and must not guess by resubmitting (in the
// trusted profile a resubmitted plan would run again unreviewed).
type Freeze struct {
	Job   string
	Since time.Time
}

// Freeze marks conversation id frozen for job: from now on Frozen fails
// job_unknown for it until the operator calls ClearFreeze. The job itself is
// not touched: it runs or finishes on its own. A conversation already frozen
// stays frozen for its first job (the earliest outcome the agent lost).
// The freeze is written to the audit log and sent to listeners
// (EventFreeze).
func (e *Engine) Freeze(id ConversationID, job string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	c, ok := e.convs[id]
	if !ok {
		return ErrUnknownConversation
	}
	if c.freeze != nil {
		return nil
	}
	c.freeze = &Freeze{Job: job, Since: e.now()}
	e.announceLocked(Event{Kind: EventFreeze, Conversation: id, Job: job},
		audit.Record{Kind: audit.KindFreeze, Tool: "browser_batch", Code: string(errcode.JobUnknown), By: "engine", Note: job},
		"frozen: batch "+job+" outcome unknown to the agent; u clears", true)
	return nil
}

// ClearFreeze ends conversation id's freeze. Only the operator calls it (the
// TUI's clear key), after looking at what the job did. Clearing a
// conversation that is not frozen does nothing.
func (e *Engine) ClearFreeze(id ConversationID) error { return e.ClearFreezeAs(id, LocalOperator) }

// ClearFreezeAs is ClearFreeze by op, attributed like a decision.
func (e *Engine) ClearFreezeAs(id ConversationID, op Operator) error {
	op = op.orLocal()
	e.mu.Lock()
	defer e.mu.Unlock()
	c, ok := e.convs[id]
	if !ok {
		return ErrUnknownConversation
	}
	if c.freeze == nil {
		return nil
	}
	job := c.freeze.Job
	c.freeze = nil
	e.announceLocked(Event{Kind: EventFreezeCleared, Conversation: id, Job: job},
		withOperator(audit.Record{Kind: audit.KindFreezeCleared, By: "operator", Note: job}, op),
		"freeze cleared by "+op.Name+": batch "+job+"; the agent may call tools again", false)
	return nil
}

// Frozen returns the job_unknown *errcode.Error every op of a frozen conversation
// fails with, naming the job and the operator's clear; nil when conversation
// id is not frozen (or unknown: other checks answer for an unknown
// conversation).
func (e *Engine) Frozen(id ConversationID) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	c, ok := e.convs[id]
	if !ok || c.freeze == nil {
		return nil
	}
	return errcode.Errorf(errcode.JobUnknown, errcode.NextUserResume,
		"the outcome of your last browser_batch submit is unknown to you: the call ended after the operator approved the plan, and batch job %s started. "+
			"Do not resubmit it. This conversation is frozen until the operator clears it in the console; then read browser_job {jobId:%q} and observe the page before anything else",
		c.freeze.Job, c.freeze.Job)
}
