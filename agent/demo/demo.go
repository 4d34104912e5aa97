// Package demo is the scripted demo agent: a deterministic walk through the
// reference journey (design.md §10) against the embedded fixture site, one
// tool call at a time, through an agent.Surface like any other agent.
//
// Invariants:
//   - The agent never answers a gate. Every review is the operator's; the
//     agent only says, in the activity log, what it is about to ask and why,
//     and then what came back (codes and short titles, never page content).
//   - Identity comes from the Surface's transport: the agent's own
//     conversation for Dispatcher-backed surfaces, the bearer token for an
//     MCP client. Args never name a conversation.
//   - A refusal by the operator (user_denied, a timed-out review, a
//     take-over) ends the walk cleanly with ErrStopped; any other surprise
//     is an *UnexpectedError naming the step, so a test fails on it.
//   - Waiting (for resume, for a popup to load, for the page's last
//     request) follows the engine's change signal or the fixture's request
//     signal; nothing sleeps.
package demo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"

	"github.com/tabwarden/tabwarden/agent"
	"github.com/tabwarden/tabwarden/agent/demo/fixture"
	"github.com/tabwarden/tabwarden/consent"
	"github.com/tabwarden/tabwarden/consent/errcode"
)

// Credentials the operator may type on the fixture's sign-in page; the
// fixture accepts any non-empty user name and password.
const (
	User     = "demo"
	Password = "demo-password"
)

// Config is what the walk runs against.
type Config struct {
	// Surface carries the demo conversation's calls. Required.
	Surface agent.Surface
	// Conv is the conversation Surface's calls belong to; narration goes to
	// its activity log and resume is awaited on it. Required.
	Conv consent.ConversationID
	// Engine is the console's gate engine: narration and waiting. Required.
	Engine *consent.Engine
	// Site is the fixture origin the journey works on; Second is an origin
	// the operator never approves (the redirect target, and the origin the
	// policy run does not list). Both required.
	Site, Second *fixture.Server

	// Visitor is a second conversation's surface, for wrong_conversation.
	// Nil: that step is skipped with a note.
	Visitor     agent.Surface
	VisitorConv consent.ConversationID

	// PolicySurface runs the policy steps: a browser launched with a policy
	// that lists only Site and blocks uploads (policy is fixed at launch,
	// so it is a separate run). Nil: those steps are skipped with a note.
	PolicySurface agent.Surface
	PolicyConv    consent.ConversationID

	// SignIn stands in for the operator's hands when no window can be seen
	// (--headless): during the take-over it signs in on tab with User and
	// Password as the person would, through the page's form, and returns
	// once the site answered. It is the console's doing, never a tool
	// call: the agent's surface still cannot type a password. Nil: the
	// operator signs in by hand.
	SignIn func(ctx context.Context, tab string) error

	// CloseTab closes a tab as the operator closing its window would. Nil:
	// the close step is skipped with a note.
	CloseTab func(ctx context.Context, conv consent.ConversationID, tab consent.TabID) error
}

// Step is one step of the walk. Steps share the agent's state (the tab,
// the last observation), so a subset must keep the steps a step builds on.
type Step struct {
	Name string // short key, e.g. "open"
	// Says is the narration before the call: what the agent asks and which
	// gate the operator will see.
	Says string
	// Headless, when set, is said instead of Says in a run whose
	// Config.SignIn stands in for the operator's hands.
	Headless string
	Run      func(ctx context.Context, a *Agent) error
}

// ErrStopped ends the walk early because the operator refused a step.
var ErrStopped = errors.New("the operator stopped the demo")

// UnexpectedError is a step whose outcome contradicts the journey.
type UnexpectedError struct {
	Step string
	Got  string
}

func (e *UnexpectedError) Error() string { return "step " + e.Step + ": " + e.Got }

// Agent is one walk's state.
type Agent struct {
	cfg Config
	// step is the current step's name, for errors; label is "step i/N",
	// for the narration.
	step, label string
	// stopped says why the operator's refusal ended the walk, for the
	// closing line.
	stopped string

	Tab, Popup  string // the main tab and the popup it opened
	Observation string // the last observation id
	saveDraft   string // toolId of save_draft
	popupRef    string // the "Open popup" button's ref in Observation
}

// New returns an agent over cfg.
func New(cfg Config) *Agent { return &Agent{cfg: cfg} }

// endedNote is the take-over banner once the demo has stopped under a
// take-over (t at a review ends it): the generic "press r to resume" would
// promise a resume with nothing left to run. SetPauseNote keeps it only
// while the conversation is taken over.
const endedNote = "The demo has ended: there is nothing to resume. Press q, then y, to quit; run the demo again to start over."

// Run walks steps in order, numbering them "Step i/N" in the narration.
// It returns nil when every step ran, ErrStopped (wrapped) when the
// operator refused a step, or the first unexpected outcome.
func (a *Agent) Run(ctx context.Context, steps []Step) error {
	for i, s := range steps {
		a.step, a.label = s.Name, fmt.Sprintf("step %d/%d", i+1, len(steps))
		says := s.Says
		if a.cfg.SignIn != nil && s.Headless != "" {
			says = s.Headless
		}
		a.say(fmt.Sprintf("Step %d/%d: %s", i+1, len(steps), says))
		err := s.Run(ctx, a)
		if err == nil {
			continue
		}
		if errors.Is(err, ErrStopped) {
			why := a.stopped
			if why == "" {
				why = err.Error()
			}
			a.say("The demo ends here: " + why + ". Press q, then y, to quit; run the demo again to start over.")
			a.cfg.Engine.SetPauseNote(a.cfg.Conv, endedNote)
			return err
		}
		a.warn("unexpected: " + err.Error() + ". The demo cannot go on: press q, then y, to quit, and run it again.")
		a.cfg.Engine.SetPauseNote(a.cfg.Conv, endedNote)
		return err
	}
	a.say(fmt.Sprintf("The journey is complete: all %d steps. Press q, then y, to quit.", len(steps)))
	return nil
}

// Select returns the steps of Journey named in names, in journey order.
func Select(names ...string) []Step {
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	var out []Step
	for _, s := range Journey() {
		if want[s.Name] {
			out = append(out, s)
		}
	}
	return out
}

// The activity log already names the conversation ("demo agent: …"), so
// the narration carries no prefix of its own.
func (a *Agent) say(text string)  { a.cfg.Engine.Note(a.cfg.Conv, text, false) }
func (a *Agent) warn(text string) { a.cfg.Engine.Note(a.cfg.Conv, text, true) }

func (a *Agent) unexpected(format string, args ...any) error {
	return &UnexpectedError{Step: a.step, Got: fmt.Sprintf(format, args...)}
}

// reply is a tool result read back as the model would read it: the
// compact JSON text.
type reply struct {
	obj   map[string]any
	isErr bool
}

func (r reply) code() string { s, _ := r.obj["code"].(string); return s }

func (r reply) str(k string) string { s, _ := r.obj[k].(string); return s }

func (a *Agent) call(ctx context.Context, s agent.Surface, conv consent.ConversationID, tool string, args any) reply {
	raw, _ := json.Marshal(args)
	if args == nil {
		raw = nil
	}
	res := s.Call(ctx, conv, tool, raw)
	var obj map[string]any
	if err := json.Unmarshal([]byte(res.JSON()), &obj); err != nil {
		obj = map[string]any{"ok": false, "code": "browser_operation_failed", "error": "unreadable result"}
	}
	return reply{obj: obj, isErr: res.IsError}
}

func (a *Agent) mine(ctx context.Context, tool string, args any) reply {
	return a.call(ctx, a.cfg.Surface, a.cfg.Conv, tool, args)
}

// refusals are the codes by which the operator (not the site, not a bug)
// stops a step.
var refusals = map[string]bool{
	string(errcode.UserDenied): true, string(errcode.NeedsAttention): true,
	string(errcode.Timeout): true, string(errcode.Paused): true,
	string(errcode.Canceled): true, string(errcode.ResultWithheld): true,
}

// why says in the operator's words what each refusal code means.
var why = map[string]string{
	string(errcode.UserDenied):     "you denied the review",
	string(errcode.Timeout):        "nobody answered the review in time",
	string(errcode.NeedsAttention): "the review waited unanswered",
	string(errcode.Paused):         "you took over the browser",
	string(errcode.Canceled):       "the step was canceled",
	string(errcode.ResultWithheld): "you withheld the result",
}

// refused narrates an operator's refusal and returns the ErrStopped that
// ends the walk.
func (a *Agent) refused(code, what string) error {
	a.stopped = what + " was refused: " + why[code]
	a.say("→ " + code + ": " + why[code])
	return fmt.Errorf("%w: %s (%s)", ErrStopped, what, code)
}

// ok demands success; an operator's refusal stops the walk.
func (a *Agent) ok(r reply, what string) (reply, error) {
	if !r.isErr {
		return r, nil
	}
	if refusals[r.code()] {
		return r, a.refused(r.code(), what)
	}
	return r, a.unexpected("%s failed with %s (%s)", what, r.code(), short(r.str("error")))
}

// want demands the failure code the journey expects here.
func (a *Agent) want(r reply, code errcode.Code, why string) error {
	if r.isErr && r.code() == string(code) {
		a.say("→ " + string(code) + " (as expected: " + why + ")")
		return nil
	}
	if r.isErr && refusals[r.code()] {
		return a.refused(r.code(), a.label)
	}
	if !r.isErr {
		return a.unexpected("want %s, the call succeeded", code)
	}
	return a.unexpected("want %s, got %s (%s)", code, r.code(), short(r.str("error")))
}

var titleRe = regexp.MustCompile(`(?m)^title "([^"\n]{0,60})`)

// shortTitle is the page title from an observation header, cut short: the
// one piece of site content the narration repeats.
func shortTitle(r reply) string {
	if t := r.str("title"); t != "" {
		if len([]rune(t)) > 60 {
			t = string([]rune(t)[:60]) + "…"
		}
		return t
	}
	if m := titleRe.FindStringSubmatch(r.str("snapshot")); m != nil {
		return m[1]
	}
	return "?"
}

// refOf finds the ref of a role+name element in an observation's text form.
func refOf(snapshot, role, name string) string {
	re := regexp.MustCompile(`(?m)^(e\d+) ` + regexp.QuoteMeta(role) + ` "` + regexp.QuoteMeta(name) + `"`)
	if m := re.FindStringSubmatch(snapshot); m != nil {
		return m[1]
	}
	return ""
}

// waitState waits on the engine's change signal until pred holds.
func (a *Agent) waitState(ctx context.Context, pred func(consent.State) bool) error {
	ch, stop := a.cfg.Engine.Changes()
	defer stop()
	for {
		if pred(a.cfg.Engine.Snapshot()) {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func tabIn(st consent.State, conv consent.ConversationID, match func(consent.TabState) bool) (consent.TabState, bool) {
	for _, c := range st.Conversations {
		if c.ID != conv {
			continue
		}
		for _, t := range c.Tabs {
			if match(t) {
				return t, true
			}
		}
	}
	return consent.TabState{}, false
}

// short bounds a console error message for the activity log.
func short(s string) string {
	if r := []rune(s); len(r) > 120 {
		return string(r[:120]) + "…"
	}
	return s
}
