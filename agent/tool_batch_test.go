package agent_test

import (
	"context"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/tabwarden/tabwarden/agent"
	"github.com/tabwarden/tabwarden/agent/demo/fixture"
	"github.com/tabwarden/tabwarden/consent"
	"github.com/tabwarden/tabwarden/consent/audit"
	"github.com/tabwarden/tabwarden/consent/errcode"
)

func fillStep(ref, text string) map[string]any {
	return map[string]any{"action": map[string]any{"type": "fill", "ref": ref, "text": text}}
}

// formSteps is the plan most batch tests run on /e2e/batch.html: fill
// First, Second and Third with alpha, beta and gamma, then click Send.
func formSteps(t *testing.T, snap string) []map[string]any {
	t.Helper()
	return []map[string]any{
		fillStep(refOf(t, snap, "textbox", "First"), "alpha"),
		fillStep(refOf(t, snap, "textbox", "Second"), "beta"),
		fillStep(refOf(t, snap, "textbox", "Third"), "gamma"),
		{"action": map[string]any{"type": "click", "ref": refOf(t, snap, "button", "Send")}},
	}
}

// submitBatch submits steps, approves the one plan review and returns the jobId.
func (e *e2e) submitBatch(tab string, steps []map[string]any) (string, consent.Review) {
	e.t.Helper()
	p := e.start("browser_batch", map[string]any{"tabId": tab, "steps": steps})
	r := e.op.Approve(consent.KindPlan, e.site.URL)
	got := wantOK(e.t, p.result())
	id, _ := got["jobId"].(string)
	if id == "" {
		e.t.Fatalf("batch returned no jobId: %v", got)
	}
	return id, r
}

// awaitJob waits for the job to end and returns browser_job's answer.
func (e *e2e) awaitJob(id string) map[string]any {
	e.t.Helper()
	done := e.d.JobDone(id)
	if done == nil {
		e.t.Fatalf("job %s unknown to the dispatcher", id)
	}
	select {
	case <-done:
	case <-e.ctx.Done():
		e.t.Fatalf("job %s never ended", id)
	}
	return wantOK(e.t, e.call("browser_job", map[string]any{"jobId": id}))
}

func batchRecords(e *e2e) []url.Values {
	var out []url.Values
	for _, r := range e.site.Requests() {
		if r.Path == "/record" && strings.Contains(r.Query, "from=batch") {
			q, _ := url.ParseQuery(r.Query)
			out = append(out, q)
		}
	}
	return out
}

func TestE2EBatchOneReviewFourEffects(t *testing.T) {
	e := newE2E(t)
	tab := e.open("/e2e/batch.html")
	_, snap := e.observe(tab, true)
	steps := formSteps(t, snap)
	actionsBefore := reviewsShown(e.conv, consent.KindAction)
	id, r := e.submitBatch(tab, steps)
	if len(r.Plan) != 4 || r.Plan[1].Name != "Second" || r.Plan[1].Text != "beta" || r.Plan[3].Type != consent.ActionClick {
		t.Errorf("plan review lists %+v, want the 4 steps with their targets", r.Plan)
	}
	job := e.awaitJob(id)
	if job["status"] != "done" {
		t.Fatalf("job = %v", job)
	}
	steps2, _ := job["steps"].([]any)
	if len(steps2) != 4 {
		t.Fatalf("job steps = %v", job["steps"])
	}
	for _, s := range steps2 {
		if s.(map[string]any)["status"] != "done" || s.(map[string]any)["dispatched"] != true {
			t.Errorf("step %v", s)
		}
	}
	if _, err := e.site.WaitFor(e.ctx, func(r fixture.Request) bool { return strings.Contains(r.Query, "from=batch") }); err != nil {
		t.Fatal(err)
	}
	recs := batchRecords(e)
	if len(recs) != 1 {
		t.Fatalf("the form was submitted %d times, want 1", len(recs))
	}
	if q := recs[0]; q.Get("a") != "alpha" || q.Get("b") != "beta" || q.Get("c") != "gamma" {
		t.Errorf("the site received %v", q)
	}
	if n := reviewsShown(e.conv, consent.KindPlan); n != 1 {
		t.Errorf("%d plan reviews, want 1", n)
	}
	if n := reviewsShown(e.conv, consent.KindAction) - actionsBefore; n != 0 {
		t.Errorf("%d per-action reviews during a plan, want 0", n)
	}
	// One audit record per step, none with the typed text.
	steps3 := 0
	for _, rec := range e.log.Records() {
		if rec.Tool == "browser_batch" && strings.HasPrefix(rec.Note, id+" step ") {
			steps3++
			if rec.Decision != "ok" || strings.Contains(rec.Input+rec.Note, "beta") {
				t.Errorf("step record %+v", rec)
			}
		}
	}
	if steps3 != 4 {
		t.Errorf("%d step audit records, want 4", steps3)
	}
	// Jobs are their conversation's own; unknown ids are job_unknown.
	other := e.otherConv("other")
	wantFail(t, e.callAs(other, "browser_job", map[string]any{"jobId": id}), errcode.WrongConversation, false)
	wantFail(t, e.call("browser_job", map[string]any{"jobId": "job-nope"}), errcode.JobUnknown, false)
}

func TestE2EBatchStopsWhenATargetChanged(t *testing.T) {
	e := newE2E(t)
	tab := e.open("/e2e/batch.html?rename=1")
	_, snap := e.observe(tab, true)
	steps := formSteps(t, snap)
	id, _ := e.submitBatch(tab, steps)
	job := e.awaitJob(id)
	if job["status"] != "failed" {
		t.Fatalf("job = %v", job)
	}
	st, _ := job["steps"].([]any)
	want := []string{"done", "failed", "skipped", "skipped"}
	for i, s := range st {
		m := s.(map[string]any)
		if m["status"] != want[i] {
			t.Errorf("step %d status %v, want %s", i+1, m["status"], want[i])
		}
	}
	second := st[1].(map[string]any)
	if second["code"] != string(errcode.PageChanged) || second["dispatched"] != false ||
		!strings.Contains(second["error"].(string), "Renamed") {
		t.Errorf("step 2 = %v, want the mismatch reported undispatched", second)
	}
	// Step 2 was never typed and the form never sent.
	_, snap = e.observe(tab, false)
	if !strings.Contains(snap, `"First" value="alpha"`) || strings.Contains(snap, "beta") {
		t.Errorf("page after the stopped job:\n%s", snap)
	}
	if n := len(batchRecords(e)); n != 0 {
		t.Errorf("the form was submitted %d times", n)
	}
}

func TestE2EBatchContinuesPastAFailedVerifyWhenAsked(t *testing.T) {
	e := newE2E(t)
	tab := e.open("/e2e/batch.html")
	_, snap := e.observe(tab, true)
	p := e.start("browser_batch", map[string]any{"tabId": tab, "stopOnError": false, "steps": []map[string]any{
		{"verify": map[string]any{"assertion": "text_contains", "value": "no such text"}},
		fillStep(refOf(t, snap, "textbox", "First"), "alpha"),
	}})
	e.op.Approve(consent.KindPlan, e.site.URL)
	id := wantOK(t, p.result())["jobId"].(string)
	job := e.awaitJob(id)
	st := job["steps"].([]any)
	first, second := st[0].(map[string]any), st[1].(map[string]any)
	if job["status"] != "failed" || first["status"] != "failed" || first["verified"] != false || second["status"] != "done" {
		t.Fatalf("job = %v", job)
	}
}

func TestE2EBatchPendingAndCooperativeCancel(t *testing.T) {
	e := newE2E(t)
	held := make(chan int)
	release := make(chan struct{})
	e.d.SetBeforeStep(holdStep(t, held, release))
	tab := e.open("/e2e/batch.html")
	_, snap := e.observe(tab, true)
	id, _ := e.submitBatch(tab, formSteps(t, snap)[:2])
	e.awaitHeld(id, held) // step 1 ran; step 2 waits
	res := wantFail(t, e.call("browser_observe", map[string]any{"tabId": tab}), errcode.JobPending, false)
	if !strings.Contains(res["error"].(string), id) {
		t.Errorf("job_pending does not name the job: %v", res["error"])
	}
	wantFail(t, e.call("browser_batch", map[string]any{"tabId": tab, "steps": []map[string]any{fillStep("e1", "x")}}), errcode.JobPending, false)
	running := wantOK(t, e.call("browser_job", map[string]any{"jobId": id, "cancel": true}))
	if running["status"] != "running" || running["cancelRequested"] != true {
		t.Errorf("cancel answer = %v", running)
	}
	close(release)
	job := e.awaitJob(id)
	st, _ := job["steps"].([]any)
	if job["status"] != "cancelled" || st[0].(map[string]any)["status"] != "done" || st[1].(map[string]any)["status"] != "skipped" {
		t.Fatalf("job after cancel = %v", job)
	}
	// The dispatched step stays done; the conversation is free again.
	_, snap = e.observe(tab, false)
	if !strings.Contains(snap, `"First" value="alpha"`) || strings.Contains(snap, "beta") {
		t.Errorf("page after the cancelled job:\n%s", snap)
	}
}

// Close stops a running job and waits for its goroutine: no job outlives
// the dispatcher that owns it.
func TestE2EBatchCloseStopsTheJob(t *testing.T) {
	e := newE2E(t)
	d := agent.NewDispatcher(agent.DispatcherConfig{Engine: e.eng, Browser: e.br})
	e.d, d = d, e.d
	defer func() { e.d = d }()
	held := make(chan int)
	release := make(chan struct{})
	e.d.SetBeforeStep(holdStep(t, held, release))
	tab := e.open("/e2e/batch.html")
	_, snap := e.observe(tab, true)
	id, _ := e.submitBatch(tab, formSteps(t, snap)[:2])
	done := e.d.JobDone(id)
	e.awaitHeld(id, held)
	closed := make(chan struct{})
	go func() {
		e.d.Close()
		close(closed)
	}()
	close(release)
	select {
	case <-closed:
	case <-e.ctx.Done():
		t.Fatal("Close did not return while a job ran")
	}
	select {
	case <-done:
	default:
		t.Fatal("Close returned before the job ended")
	}
	// The agent reads its job before anything else, as it must (an
	// answer never used freezes the conversation, tool_batch.go).
	wantOK(t, e.call("browser_job", map[string]any{"jobId": id}))
	_, snap = e.observe(tab, false)
	if strings.Contains(snap, "beta") {
		t.Errorf("a step ran after Close:\n%s", snap)
	}
}

// awaitHeld waits until the job's beforeStep hook holds step 2; a job that
// ended before getting there fails the test instead of hanging it.
func (e *e2e) awaitHeld(id string, held <-chan int) {
	e.t.Helper()
	select {
	case <-held:
	case <-e.d.JobDone(id):
		e.t.Fatalf("the job ended before step 2: %s", e.call("browser_job", map[string]any{"jobId": id}).JSON())
	case <-e.ctx.Done():
		e.t.Fatal("the job never reached step 2")
	}
}

// holdStep is a beforeStep hook that holds step 2 until release closes. It
// lets go when the test ends, so a failing test never leaves the job's
// goroutine (and the dispatcher's Close) waiting.
func holdStep(t *testing.T, held chan<- int, release <-chan struct{}) func(int) {
	ctx, stop := context.WithCancel(context.Background())
	t.Cleanup(stop) // runs before newE2E's cleanup closes the dispatcher
	return func(i int) {
		if i != 1 {
			return
		}
		select {
		case held <- i:
		case <-ctx.Done():
			return
		}
		select {
		case <-release:
		case <-ctx.Done():
		}
	}
}

// submitThenHangUp submits steps on tab as a client that goes away the
// moment its job has started, after the operator approved the plan: the
// answer it would have read is what it returns.
func (e *e2e) submitThenHangUp(tab string, steps []map[string]any) agent.Result {
	e.t.Helper()
	callCtx, hangUp := context.WithCancel(e.ctx)
	defer hangUp()
	e.d.SetAfterStart(func(string) { hangUp() })
	answer := make(chan agent.Result, 1)
	args := map[string]any{"tabId": tab, "steps": steps}
	go func() { answer <- e.d.Call(callCtx, e.conv, "browser_batch", rawArgs(e.t, args)) }()
	e.op.Approve(consent.KindPlan, e.site.URL)
	select {
	case res := <-answer:
		return res
	case <-e.ctx.Done():
		e.t.Fatal("the submit never returned")
		return agent.Result{}
	}
}

var jobIDPattern = regexp.MustCompile(`job-[0-9a-f]{16}`)

// The client goes away after the operator approved the plan and the job
// started: the agent cannot know its plan runs, so the conversation is
// frozen with job_unknown until the operator clears it. The job itself runs
// to its end exactly once, and nothing the agent sends can replay it.
func TestE2EBatchClientGoneAfterApprovalFreezesUntilCleared(t *testing.T) {
	e := newE2E(t)
	held := make(chan int)
	release := make(chan struct{})
	e.d.SetBeforeStep(holdStep(t, held, release))
	tab := e.open("/e2e/batch.html")
	_, snap := e.observe(tab, true)
	steps := formSteps(t, snap)
	res := e.submitThenHangUp(tab, steps)
	lost := wantFail(t, res, errcode.JobUnknown, false)
	id := jobIDPattern.FindString(lost["error"].(string))
	if id == "" || e.d.JobDone(id) == nil {
		t.Fatalf("job_unknown names no started job: %v", lost["error"])
	}
	e.awaitHeld(id, held) // step 1 ran; step 2 waits

	frozen := func(tool string, args map[string]any) {
		t.Helper()
		f := wantFail(t, e.call(tool, args), errcode.JobUnknown, false)
		msg := f["error"].(string)
		if !strings.Contains(msg, id) || !strings.Contains(msg, "unknown") || !strings.Contains(msg, "console") {
			t.Errorf("%s: job_unknown message %q does not name the job and the operator's clear", tool, msg)
		}
		if f["next"] != string(errcode.NextUserResume) {
			t.Errorf("%s: next = %v", tool, f["next"])
		}
	}
	frozen("browser_observe", map[string]any{"tabId": tab})
	// The same plan again is turned away before any review: never replayed.
	frozen("browser_batch", map[string]any{"tabId": tab, "steps": steps})
	if n := reviewsShown(e.conv, consent.KindPlan); n != 1 {
		t.Errorf("%d plan reviews, want 1", n)
	}
	// Listing tabs and reading the named job stay open.
	wantOK(t, e.call("browser_tabs", nil))
	if j := wantOK(t, e.call("browser_job", map[string]any{"jobId": id})); j["status"] != agent.JobRunning {
		t.Errorf("browser_job while frozen = %v", j)
	}
	if c := convState(e); c.Frozen == nil || c.Frozen.Job != id {
		t.Errorf("the engine shows %+v, want frozen for %s", c.Frozen, id)
	}

	// The job runs to its end under the dispatcher, not the lost call.
	close(release)
	job := e.awaitJob(id)
	if job["status"] != agent.JobDone {
		t.Fatalf("job = %v", job)
	}
	waitRecord(t, e.ctx, e.site, "batch")
	recs := batchRecords(e)
	if len(recs) != 1 || recs[0].Get("a") != "alpha" || recs[0].Get("c") != "gamma" {
		t.Fatalf("the site received %v, want the form once", recs)
	}
	// The job's end does not thaw the conversation: only the operator does.
	frozen("browser_observe", map[string]any{"tabId": tab})

	if err := e.eng.ClearFreeze(e.conv); err != nil {
		t.Fatal(err)
	}
	// The form went away with its submit; what matters is that observe runs.
	if _, snap = e.observe(tab, false); !strings.Contains(snap, "/record") {
		t.Errorf("page after the job:\n%s", snap)
	}
	if n := len(batchRecords(e)); n != 1 {
		t.Errorf("the form was submitted %d times, want 1", n)
	}
	var froze, cleared int
	for _, r := range e.stk.Audit.Records() {
		if r.Conversation == string(e.conv) && r.Note == id {
			switch r.Kind {
			case audit.KindFreeze:
				froze++
			case audit.KindFreezeCleared:
				cleared++
			}
		}
	}
	if froze != 1 || cleared != 1 {
		t.Errorf("engine audit: %d freeze and %d clear records for %s, want 1 and 1", froze, cleared, id)
	}
}

// Cleared while the job still runs, the conversation is back to the
// ordinary rule: job_pending naming the job.
func TestE2EBatchFreezeClearedWhileRunningIsJobPending(t *testing.T) {
	e := newE2E(t)
	held := make(chan int)
	release := make(chan struct{})
	e.d.SetBeforeStep(holdStep(t, held, release))
	tab := e.open("/e2e/batch.html")
	_, snap := e.observe(tab, true)
	res := e.submitThenHangUp(tab, formSteps(t, snap)[:2])
	id := jobIDPattern.FindString(wantFail(t, res, errcode.JobUnknown, false)["error"].(string))
	e.awaitHeld(id, held)
	if err := e.eng.ClearFreeze(e.conv); err != nil {
		t.Fatal(err)
	}
	p := wantFail(t, e.call("browser_observe", map[string]any{"tabId": tab}), errcode.JobPending, false)
	if !strings.Contains(p["error"].(string), id) {
		t.Errorf("job_pending does not name the job: %v", p["error"])
	}
	close(release)
	if job := e.awaitJob(id); job["status"] != agent.JobDone {
		t.Fatalf("job = %v", job)
	}
	_, snap = e.observe(tab, false)
	if !strings.Contains(snap, `"Second" value="beta"`) {
		t.Errorf("page after the job:\n%s", snap)
	}
}

// A client that goes away while the plan is still on screen withdraws the
// review: nothing starts, nothing is frozen.
func TestE2EBatchClientGoneDuringReviewRunsNothing(t *testing.T) {
	e := newE2E(t)
	started := make(chan string, 1)
	e.d.SetAfterStart(func(id string) { started <- id })
	tab := e.open("/e2e/batch.html")
	_, snap := e.observe(tab, true)
	callCtx, hangUp := context.WithCancel(e.ctx)
	defer hangUp()
	args := map[string]any{"tabId": tab, "steps": []map[string]any{
		fillStep(refOf(t, snap, "textbox", "First"), "alpha"),
		{"action": map[string]any{"type": "click", "ref": refOf(t, snap, "button", "Send")}},
	}}
	answer := make(chan agent.Result, 1)
	go func() { answer <- e.d.Call(callCtx, e.conv, "browser_batch", rawArgs(t, args)) }()
	e.op.Await(consent.KindPlan, e.site.URL)
	hangUp()
	var res agent.Result
	select {
	case res = <-answer:
	case <-e.ctx.Done():
		t.Fatal("the submit never returned")
	}
	wantFail(t, res, errcode.Canceled, false)
	select {
	case id := <-started:
		t.Fatalf("job %s started after its review was withdrawn", id)
	default:
	}
	if len(e.eng.Snapshot().Queue) != 0 {
		t.Errorf("the plan review is still pending: %+v", e.eng.Snapshot().Queue)
	}
	if err := e.eng.Frozen(e.conv); err != nil {
		t.Fatalf("frozen though nothing ran: %v", err)
	}
	_, snap = e.observe(tab, false)
	if strings.Contains(snap, "alpha") || len(batchRecords(e)) != 0 {
		t.Errorf("the withdrawn plan touched the page:\n%s", snap)
	}
}

func convState(e *e2e) consent.ConversationState {
	for _, c := range e.eng.Snapshot().Conversations {
		if c.ID == e.conv {
			return c
		}
	}
	e.t.Fatalf("conversation %s is gone", e.conv)
	return consent.ConversationState{}
}
