package agent

import (
	"context"

	"github.com/tabwarden/tabwarden/consent"
	"github.com/tabwarden/tabwarden/consent/errcode"
)

// jobTool is browser_job (design.md §5).
var jobTool = NewTool(ToolSpec{
	Name:  "browser_job",
	Title: "Read or cancel a plan's job",
	Description: "Read the status of a job from browser_batch (running, done, failed or cancelled) with each step's result, or ask it to stop with cancel:true." +
		" Cancelling is cooperative: the job stops before its next step; a step already sent is never undone. A step with mayHaveChangedState:true may have happened: observe before anything else." +
		" Only the last 50 jobs are kept (job_unknown after that)." + descUntrusted,
	DuringJob: true,
}, (*Dispatcher).job)

// JobArgs are browser_job's arguments (the input schema is inferred from them; the jsonschema tags are what the model reads).
type JobArgs struct {
	JobID  string `json:"jobId" jsonschema:"jobId from browser_batch"`
	Cancel bool   `json:"cancel,omitempty" jsonschema:"stop the job before its next step (a step already sent is not undone)"`
}

// job answers browser_job: the job's status and steps, and a cancel request.
func (d *Dispatcher) job(_ context.Context, conv consent.ConversationID, a JobArgs) (Result, consent.TabID) {
	js := d.jobs
	js.mu.Lock()
	defer js.mu.Unlock()
	j := js.byID[a.JobID]
	if j == nil {
		return fail(errcode.Errorf(errcode.JobUnknown, errcode.NextObserve,
			"no job %q: only the last %d jobs are kept, in memory; observe the page to see what happened", a.JobID, keptJobs)), ""
	}
	if j.conv != conv {
		return fail(errcode.Errorf(errcode.WrongConversation, errcode.NextListTabs, "that job belongs to another conversation")), ""
	}
	if js.uncollected[conv] == j {
		delete(js.uncollected, conv)
	}
	if a.Cancel && j.status == JobRunning {
		// Cooperative: the step under way finishes (or fails) on its own;
		// nothing after it starts.
		j.cancelled = true
	}
	steps := append([]StepResult(nil), j.steps...)
	fields := map[string]any{"jobId": j.id, "status": j.status, "steps": steps, "trust": TrustUntrusted}
	if j.status == JobRunning && j.cancelled {
		fields["cancelRequested"] = true
	}
	if j.status != JobRunning {
		fields["next"] = string(errcode.NextObserve)
	}
	return ok(fields), ""
}
