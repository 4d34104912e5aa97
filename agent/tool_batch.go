package agent

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/tabwarden/tabwarden/browser"
	"github.com/tabwarden/tabwarden/browser/dom"
	"github.com/tabwarden/tabwarden/consent"
	"github.com/tabwarden/tabwarden/consent/audit"
	"github.com/tabwarden/tabwarden/consent/errcode"
)

// batchTool is browser_batch (design.md §5).
var batchTool = NewTool(ToolSpec{
	Name:  "browser_batch",
	Title: "Run a reviewed plan of actions",
	Description: "Submit a plan of 1 to 20 steps on one of your tabs, each an act (click, fill and select by ref from your latest observation; key; scroll) or a verify. The person reviews the whole plan once (\"Allow these N actions\", every step listed); then the steps run in the background and you get a jobId." +
		" Before each step the console re-observes and checks the step's target still has the role and name it had when you planned; if not, the job stops there." +
		" Until the job ends, your other calls fail job_pending: poll browser_job. Do not plan steps whose targets only appear after earlier steps." + descUncertain + descHandoff + descTabID,
	Refine: refine(itemsBetween(1, MaxBatchSteps, "steps")),
}, (*Dispatcher).batch)

// Batch limits (design.md §5).
const (
	MaxBatchSteps = 20
	keptJobs      = 50
)

// Job statuses of browser_job.
const (
	JobRunning   = "running"
	JobDone      = "done"
	JobFailed    = "failed"
	JobCancelled = "cancelled"
)

// jobs holds the batch jobs of one Dispatcher.
//
// Invariants:
//   - A job runs in a goroutine owned by the dispatcher, under the
//     dispatcher's context, never the submitting call's: a client that goes
//     away after the plan was approved does not stop or orphan the job, and
//     Close cancels every job and waits for its goroutine.
//   - A conversation has at most one running job; while it runs, its other
//     calls (but browser_job and browser_tabs) fail job_pending, and the
//     failure names the job.
//   - A submit is in flight from the plan's approval until its {jobId}
//     answer is returned. If the call's context ends before the job
//     starts, nothing starts (canceled) and a resubmit is safe. If it ends
//     after the job started, the client cannot know that its plan runs, and
//     resubmitting would run it twice (unreviewed, in the trusted profile):
//     the engine freezes the conversation (consent.Engine.Freeze) and every
//     call but browser_tabs and browser_job fails job_unknown naming the
//     job, until the operator clears it in the console — however the job
//     ends meanwhile. browser_job stays open so a reconnected agent can read
//     (or cancel, which only ever stops steps) the job the message names.
//     A client that disconnects while the plan review is still on screen
//     withdraws the review: nothing starts, nothing freezes.
//   - No transport can tell that an answer reached its client: bytes the
//     server wrote may die in a proxy or a kernel buffer. So a started
//     job's answer counts as received only when the conversation calls
//     browser_job with its id (the answer says next:"browser_job", and
//     the job's job_pending refusals name it). Until then the job is
//     uncollected; once it has ended, the conversation's next call but
//     browser_tabs and browser_job freezes it (job_unknown naming the job)
//     instead of running: an agent that never used the id may not hold it,
//     and may be about to resubmit the plan. A transport that knows the
//     answer was lost (Lost, below) freezes at once.
//   - Each step runs as its own engine op (busy, take-over, operator cancel
//     and the op deadline apply per step); the plan's approval stands in for
//     each step's "Allow once", and nothing else. A freeze stops no step.
//   - Cancel is cooperative: it stops before the next step and cancels the
//     running step's context; a step whose input was already dispatched is
//     reported dispatched and is never undone or repeated.
//   - The last keptJobs finished jobs are kept (running ones always are).
type jobs struct {
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu     sync.Mutex
	byID   map[string]*job
	order  []string // job ids, oldest first
	active map[consent.ConversationID]*job
	// uncollected is each conversation's started job whose id it has not
	// yet used in browser_job.
	uncollected map[consent.ConversationID]*job

	// beforeStep, when a test sets it, runs before each step starts.
	beforeStep func(i int)
	// afterStart, when a test sets it, runs once a submit's job has
	// started and before the submit looks at its call's context.
	afterStart func(id string)
}

func newJobs() *jobs {
	ctx, cancel := context.WithCancel(context.Background())
	return &jobs{ctx: ctx, cancel: cancel, byID: map[string]*job{}, active: map[consent.ConversationID]*job{}, uncollected: map[consent.ConversationID]*job{}}
}

func (js *jobs) close() {
	js.cancel()
	js.wg.Wait()
}

// pending fails job_pending while conv has a running job.
func (js *jobs) pending(conv consent.ConversationID) error {
	js.mu.Lock()
	defer js.mu.Unlock()
	if j := js.active[conv]; j != nil {
		return errcode.Errorf(errcode.JobPending, errcode.NextNone,
			"batch job %s is still running: call browser_job {jobId:%q} until it is done, failed or cancelled (or cancel it)", j.id, j.id)
	}
	return nil
}

type job struct {
	id     string
	conv   consent.ConversationID
	tab    consent.TabID
	origin string
	plan   []plannedStep
	stop   bool // stopOnError
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}

	// Guarded by jobs.mu.
	status    string
	cancelled bool
	steps     []StepResult
}

// plannedStep is one step as the operator approved it.
type plannedStep struct {
	act    *dom.Action
	verify *BatchVerify
	// role and name of the act's ref target in the plan-time observation.
	role, name string
}

// StepResult is one step of browser_job's answer. Evidence is site content.
type StepResult struct {
	Index               int    `json:"index"`
	Type                string `json:"type"` // act or verify
	Status              string `json:"status"`
	Dispatched          bool   `json:"dispatched"`
	MayHaveChangedState bool   `json:"mayHaveChangedState,omitempty"`
	Outcome             string `json:"outcome,omitempty"`
	Verified            *bool  `json:"verified,omitempty"`
	Evidence            string `json:"evidence,omitempty"`
	Code                string `json:"code,omitempty"`
	Error               string `json:"error,omitempty"`
}

// Step statuses.
const (
	stepPending = "pending"
	stepRunning = "running"
	stepDone    = "done"
	stepFailed  = "failed"
	stepSkipped = "skipped"
)

func (d *Dispatcher) batch(ctx context.Context, conv consent.ConversationID, a BatchArgs) (Result, consent.TabID) {
	if len(a.Steps) == 0 || len(a.Steps) > MaxBatchSteps {
		return fail(errcode.Errorf(errcode.InvalidAction, errcode.NextNone, "a batch has 1 to %d steps, not %d", MaxBatchSteps, len(a.Steps))), ""
	}
	for i, s := range a.Steps {
		if err := checkStep(s); err != nil {
			return fail(errcode.Errorf(errcode.Of(err), errcode.NextNone, "step %d: %s", i+1, errMessage(err))), ""
		}
	}
	p, res, tab := d.beginPage(ctx, conv, a.TabID, "batch")
	if p == nil {
		return res, tab
	}
	defer p.op.End()
	// Refs are stable within a document, so the plan names each target by
	// what it is now; every step re-checks that before it runs.
	targets, err := planTargets(p.op.Context(), p.dt)
	if err != nil {
		return fail(opErr(p.op, err)), tab
	}
	plan := make([]plannedStep, len(a.Steps))
	review := make([]consent.Action, len(a.Steps))
	for i, s := range a.Steps {
		if s.Verify != nil {
			v := *s.Verify
			plan[i] = plannedStep{verify: &v}
			review[i] = consent.Action{Type: "verify", Assertion: v.Assertion, Text: v.Value}
			continue
		}
		act := domAction(*s.Action)
		ps := plannedStep{act: &act}
		if act.Ref != "" {
			e, found := targets[act.Ref]
			if !found {
				return fail(errcode.Errorf(errcode.StaleElement, errcode.NextObserve, "step %d: element %s is not in the page", i+1, act.Ref)), tab
			}
			if e.Sensitive {
				return fail(errcode.Errorf(errcode.SignInRequired, errcode.NextNone, "step %d: password, one-time-code and file inputs are the operator's: ask for a take-over (browser_handoff)", i+1)), tab
			}
			ps.role, ps.name = e.Role, e.Name
		}
		plan[i] = ps
		review[i] = consent.Action{
			Type: consent.ActionType(act.Type), Ref: act.Ref, Role: ps.role, Name: ps.name,
			Text: act.Text, Value: act.Value, Label: act.Label, Key: act.Key, DeltaY: int(act.DeltaY),
		}
	}
	if err := d.engine.Ask(p.op.Context(), consent.Request{
		Gate: consent.GateAction, Conversation: conv, Tab: tab, Origin: p.origin,
		Plan: review, Recheck: d.sameOrigin(tab, p.origin),
	}); err != nil {
		return fail(opErr(p.op, err)), tab
	}
	// A client gone before the job starts loses nothing it cannot redo.
	if ctx.Err() != nil {
		return fail(errcode.Errorf(errcode.Canceled, errcode.NextNone, "the call ended after the plan was approved; nothing ran")), tab
	}
	j, err := d.jobs.start(conv, tab, p.origin, plan, a.StopOnError == nil || *a.StopOnError)
	if err != nil {
		return fail(err), tab
	}
	// The plan op lets go of the tab before the first step takes it (End
	// is idempotent; the deferred one is then a no-op). The job's steps
	// take the tab one op at a time, and job_pending, registered above,
	// keeps the conversation's other calls out in between.
	p.op.End()
	d.jobs.wg.Add(1)
	go func() {
		defer d.jobs.wg.Done()
		d.runJob(j)
	}()
	if d.jobs.afterStart != nil {
		d.jobs.afterStart(j.id)
	}
	// The answer below is the agent's only news that the plan runs; if its
	// call already ended, the answer goes nowhere. Checked last, so the
	// freeze covers the whole window the console can see.
	// Freeze fails only for a conversation that ended: nobody is left to
	// mislead, and the answer below goes nowhere either.
	if ctx.Err() != nil && d.engine.Freeze(conv, j.id) == nil {
		if err := d.engine.Frozen(conv); err != nil {
			return fail(err), tab
		}
	}
	return ok(map[string]any{"jobId": j.id, "status": JobRunning, "steps": len(plan), "next": "browser_job"}), tab
}

// lostAnswer is the id of conv's uncollected job once it has ended (and
// forgets it: the freeze that follows takes over), "" otherwise. A job still
// running is left to job_pending, which names it.
func (js *jobs) lostAnswer(conv consent.ConversationID) string {
	js.mu.Lock()
	defer js.mu.Unlock()
	j := js.uncollected[conv]
	if j == nil || j.status == JobRunning {
		return ""
	}
	delete(js.uncollected, conv)
	return j.id
}

func (js *jobs) start(conv consent.ConversationID, tab consent.TabID, origin string, plan []plannedStep, stop bool) (*job, error) {
	var b [8]byte
	_, _ = rand.Read(b[:])
	ctx, cancel := context.WithCancel(js.ctx)
	j := &job{
		id: "job-" + hex.EncodeToString(b[:]), conv: conv, tab: tab, origin: origin, plan: plan, stop: stop,
		ctx: ctx, cancel: cancel, done: make(chan struct{}), status: JobRunning, steps: make([]StepResult, len(plan)),
	}
	for i, p := range plan {
		j.steps[i] = StepResult{Index: i + 1, Type: "act", Status: stepPending}
		if p.verify != nil {
			j.steps[i].Type = "verify"
		}
	}
	js.mu.Lock()
	defer js.mu.Unlock()
	if js.ctx.Err() != nil {
		cancel()
		return nil, errcode.Errorf(errcode.Canceled, errcode.NextNone, "the console is shutting down")
	}
	if cur := js.active[conv]; cur != nil {
		cancel()
		return nil, errcode.Errorf(errcode.JobPending, errcode.NextNone, "batch job %s is still running", cur.id)
	}
	js.byID[j.id] = j
	js.order = append(js.order, j.id)
	js.active[conv] = j
	js.uncollected[conv] = j
	js.evictLocked()
	return j, nil
}

func (js *jobs) evictLocked() {
	for len(js.order) > keptJobs {
		evicted := false
		for i, id := range js.order {
			if j := js.byID[id]; j.status != JobRunning {
				if js.uncollected[j.conv] == j {
					delete(js.uncollected, j.conv)
				}
				delete(js.byID, id)
				js.order = append(js.order[:i:i], js.order[i+1:]...)
				evicted = true
				break
			}
		}
		if !evicted {
			return
		}
	}
}

// runJob runs the plan's steps in order and always ends the job.
func (d *Dispatcher) runJob(j *job) {
	defer j.cancel()
	final := JobDone
	for i := range j.plan {
		if d.jobs.beforeStep != nil {
			d.jobs.beforeStep(i)
		}
		d.jobs.mu.Lock()
		stopped := j.cancelled || j.ctx.Err() != nil
		if !stopped {
			j.steps[i].Status = stepRunning
		}
		d.jobs.mu.Unlock()
		if stopped {
			final = JobCancelled
			break
		}
		res, fatal := d.runStep(j, i)
		d.recordStep(j, i, res)
		d.jobs.mu.Lock()
		j.steps[i] = res
		cancelled := j.cancelled
		d.jobs.mu.Unlock()
		if res.Status == stepDone {
			continue
		}
		if res.Code == string(errcode.Canceled) {
			final = JobCancelled
			break
		}
		final = JobFailed
		if fatal || j.stop || cancelled {
			break
		}
	}
	d.jobs.finish(j, final)
}

func (js *jobs) finish(j *job, status string) {
	js.mu.Lock()
	defer js.mu.Unlock()
	for i := range j.steps {
		if j.steps[i].Status == stepPending || j.steps[i].Status == stepRunning {
			j.steps[i].Status = stepSkipped
		}
	}
	j.status = status
	if js.active[j.conv] == j {
		delete(js.active, j.conv)
	}
	close(j.done)
}

// stopsAJob are failures after which no later step can mean what the
// operator approved, whatever stopOnError says.
var stopsAJob = map[errcode.Code]bool{
	errcode.Canceled: true, errcode.Paused: true, errcode.TabClosed: true,
	errcode.WrongConversation: true, errcode.PageChanged: true, errcode.WebsiteBlocked: true,
	errcode.BrowserUnavailable: true, errcode.Timeout: true,
}

// runStep runs step i as its own op: same origin as approved, a fresh
// internal observation, the target's role and name as approved, then the
// input. It reports whether the failure must stop the job regardless of
// stopOnError.
func (d *Dispatcher) runStep(j *job, i int) (StepResult, bool) {
	ps := j.plan[i]
	r := StepResult{Index: i + 1, Type: "act"}
	if ps.verify != nil {
		r.Type = "verify"
	}
	failed := func(err error) (StepResult, bool) {
		var ce *errcode.Error
		if !errors.As(err, &ce) {
			ce = &errcode.Error{Code: errcode.BrowserOperationFailed, Message: err.Error()}
		}
		r.Status, r.Code, r.Error = stepFailed, string(ce.Code), ce.Message
		r.Dispatched = ce.Dispatched
		r.MayHaveChangedState = ce.Dispatched || ce.MayHaveChangedState
		return r, r.MayHaveChangedState || stopsAJob[ce.Code]
	}
	op, err := d.engine.Begin(j.ctx, j.conv, j.tab, fmt.Sprintf("batch step %d/%d", i+1, len(j.plan)))
	if err != nil {
		if j.ctx.Err() != nil {
			err = errcode.Errorf(errcode.Canceled, errcode.NextNone, "the job was stopped")
		}
		return failed(err)
	}
	defer op.End()
	if err := d.sameOrigin(j.tab, j.origin)(); err != nil {
		return failed(err)
	}
	dt, _, err := d.readable(op, j.conv, j.tab)
	if err != nil {
		return failed(opErr(op, err))
	}
	obs, err := dt.Observe(op.Context(), dom.ObserveRequest{})
	if err != nil {
		return failed(opErr(op, err))
	}
	if ps.verify != nil {
		vr, err := dt.Verify(op.Context(), ps.verify.Assertion, ps.verify.Value)
		if err != nil {
			return failed(opErr(op, err))
		}
		r.Verified, r.Evidence = &vr.Verified, vr.Evidence
		r.Status = stepDone
		if !vr.Verified {
			r.Status = stepFailed
		}
		return r, false
	}
	prep, err := dt.Prepare(op.Context(), obs.ID, *ps.act)
	if err != nil {
		return failed(opErr(op, err))
	}
	if ps.act.Ref != "" && (prep.Target == nil || prep.Target.Role != ps.role || prep.Target.Name != ps.name) {
		prep.Release()
		now := "gone"
		if prep.Target != nil {
			now = prep.Target.Role + " " + quoted(prep.Target.Name)
		}
		return failed(errcode.Errorf(errcode.PageChanged, errcode.NextObserveBeforeRetry,
			"step %d: target %s is now %s, the approved plan named %s %s; the job stopped before touching it",
			i+1, ps.act.Ref, now, ps.role, quoted(ps.name)))
	}
	receipt, err := prep.Dispatch(op.Context())
	if err != nil {
		return failed(opErr(op, err))
	}
	r.Status, r.Dispatched, r.Outcome = stepDone, receipt.Dispatched, receipt.Outcome
	return r, false
}

func quoted(s string) string { return fmt.Sprintf("%q", s) }

// planTargets reads every element of the page once, at plan time.
func planTargets(ctx context.Context, dt *browser.Handle) (map[string]dom.Element, error) {
	out := map[string]dom.Element{}
	req := dom.ObserveRequest{}
	for page := 0; page < 16; page++ {
		obs, err := dt.Observe(ctx, req)
		if err != nil {
			return nil, err
		}
		for _, e := range obs.Elements {
			out[e.Ref] = e
		}
		if obs.NextCursor == "" {
			break
		}
		req = dom.ObserveRequest{Cursor: obs.NextCursor}
	}
	return out, nil
}

// checkStep validates a step's shape before anything touches the page.
func checkStep(s BatchStep) error {
	if (s.Action == nil) == (s.Verify == nil) {
		return errcode.Errorf(errcode.InvalidAction, errcode.NextNone, "give action or verify, not both")
	}
	if v := s.Verify; v != nil {
		return checkAssertion(v.Assertion, v.Value)
	}
	a := s.Action
	bad := func(format string, args ...any) error {
		return errcode.Errorf(errcode.InvalidAction, errcode.NextNone, format, args...)
	}
	if a.X != nil || a.Y != nil {
		if a.Type == "click" {
			return bad("a batch clicks by ref only: pixels cannot be re-checked before each step")
		}
	}
	switch a.Type {
	case "click", "fill", "select":
		if a.Ref == "" {
			return bad("%s needs ref", a.Type)
		}
	case "key":
		if !validKey(a.Key) {
			return errcode.Errorf(errcode.InvalidKey, errcode.NextNone, "key must be one of Enter, Tab, Escape, ArrowUp, ArrowDown, ArrowLeft, ArrowRight, Backspace, Space, PageUp, PageDown, Home, End")
		}
	case "scroll":
		if a.DeltaY == nil || *a.DeltaY == 0 || *a.DeltaY < -dom.MaxScroll || *a.DeltaY > dom.MaxScroll {
			return errcode.Errorf(errcode.InvalidScroll, errcode.NextNone, "deltaY must be non-zero and within [-%d, %d]", dom.MaxScroll, dom.MaxScroll)
		}
	default:
		return bad("unknown action type %q (click, fill, select, key, scroll)", a.Type)
	}
	if a.Type == "fill" && utf8.RuneCountInString(a.Text) > dom.MaxFillChars {
		return bad("fill text is longer than %d characters", dom.MaxFillChars)
	}
	if a.Type == "select" && a.Value == "" && a.Label == "" {
		return bad("select needs value or label")
	}
	return nil
}

func validKey(k string) bool {
	for _, v := range schemaActKeys {
		if strings.EqualFold(v.(string), strings.TrimSpace(k)) {
			return true
		}
	}
	return false
}

func errMessage(err error) string {
	var ce *errcode.Error
	if errors.As(err, &ce) {
		return ce.Message
	}
	return err.Error()
}

// recordStep writes one audit record per step: the plan's one tool_call
// record does not say which steps ran. Never the typed text.
func (d *Dispatcher) recordStep(j *job, i int, r StepResult) {
	if d.audit == nil {
		return
	}
	rec := audit.Record{
		Time: d.now(), Kind: audit.KindToolCall, Conversation: string(j.conv), Tab: string(j.tab), Origin: j.origin,
		Tool: "browser_batch", Code: r.Code, Decision: "ok",
		Note: fmt.Sprintf("%s step %d/%d %s", j.id, i+1, len(j.plan), r.Type),
	}
	if r.Status != stepDone {
		rec.Decision = r.Status
	}
	if a := j.plan[i].act; a != nil {
		rec.Action = a.Type
		rec.Size = int64(len(a.Text))
	}
	if err := d.audit.Write(rec); err != nil {
		d.engine.Note(j.conv, fmt.Sprintf("audit write failed for %s step %d: %v", j.id, i+1, err), true)
	}
}

// AnswerLost is a transport's word that res, an answer to conv, may not
// have reached its client (the call ended before it was written, or its
// write failed). An answer naming conv's uncollected job freezes the
// conversation at once, whether the job still runs or not; any other answer
// changes nothing (its call can be redone, or says what it did in the
// engine's own state).
func (d *Dispatcher) AnswerLost(conv consent.ConversationID, res Result) {
	id, _ := res.Object["jobId"].(string)
	if id == "" || res.IsError {
		return
	}
	js := d.jobs
	js.mu.Lock()
	j := js.uncollected[conv]
	if j == nil || j.id != id {
		js.mu.Unlock()
		return
	}
	delete(js.uncollected, conv)
	js.mu.Unlock()
	_ = d.engine.Freeze(conv, id) // fails only for an ended conversation
}

// BatchVerify is a verify step of a batch.
type BatchVerify struct {
	Assertion string `json:"assertion" jsonschema:"text_contains, text_absent, url_is, title_contains or element_visible"`
	Value     string `json:"value" jsonschema:"text, URL or title to check; for element_visible: role and name as 'button \"Save\"'"`
}

// BatchStep is one step of a batch: an act or a verify.
type BatchStep struct {
	Action *ActAction   `json:"action,omitempty" jsonschema:"an act (click, fill and select by ref; key; scroll); targets are refs from your latest observation"`
	Verify *BatchVerify `json:"verify,omitempty" jsonschema:"a check, as browser_verify"`
}

// BatchArgs are browser_batch's arguments (the input schema is inferred from them; the jsonschema tags are what the model reads).
type BatchArgs struct {
	TabID       string      `json:"tabId,omitempty" jsonschema:"owned tab; defaults to the conversation's only tab"`
	Steps       []BatchStep `json:"steps" jsonschema:"1 to 20 steps, run in order"`
	StopOnError *bool       `json:"stopOnError,omitempty" jsonschema:"stop at the first failed step (default true); a changed target, a cancel or an uncertain outcome always stops"`
}
