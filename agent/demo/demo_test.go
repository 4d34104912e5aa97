package demo

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/tabwarden/tabwarden/agent"
	"github.com/tabwarden/tabwarden/agent/demo/fixture"
	"github.com/tabwarden/tabwarden/consent"
	"github.com/tabwarden/tabwarden/consent/errcode"
)

// fakeSurface answers each tool from a script and records the calls.
type fakeSurface struct {
	answer func(tool string, n int) agent.Result
	calls  []string
}

func (f *fakeSurface) Call(_ context.Context, _ consent.ConversationID, tool string, _ json.RawMessage) agent.Result {
	n := f.count(tool)
	f.calls = append(f.calls, tool)
	return f.answer(tool, n)
}

func (f *fakeSurface) count(tool string) int {
	n := 0
	for _, c := range f.calls {
		if c == tool {
			n++
		}
	}
	return n
}

func okResult(fields map[string]any) agent.Result {
	obj := map[string]any{"ok": true}
	for k, v := range fields {
		obj[k] = v
	}
	return agent.Result{Object: obj}
}

func failResult(code errcode.Code) agent.Result {
	return agent.Result{IsError: true, Object: map[string]any{"ok": false, "code": string(code), "error": "refused"}}
}

func page(title string) agent.Result {
	return okResult(map[string]any{"observationId": "o1", "title": title, "snapshot": "title \"" + title + "\"\ne1 heading \"" + title + "\""})
}

func newWalk(t *testing.T, s agent.Surface) (*Agent, *consent.Engine) {
	t.Helper()
	eng := consent.New(consent.Config{})
	t.Cleanup(eng.Close)
	eng.AddConversation("demo", "demo agent")
	site, err := fixture.New()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(site.Close)
	a := New(Config{Surface: s, Conv: "demo", Engine: eng, Site: site, Second: site})
	a.Tab = "t1"
	return a, eng
}

func activity(eng *consent.Engine) string {
	var b strings.Builder
	for _, e := range eng.Snapshot().Activity {
		b.WriteString(e.Text + "\n")
	}
	return b.String()
}

// TestSessionHandsBackAfterEarlyResume: resuming before signing in is the
// newcomer's likeliest slip; the walk hands the browser back with the
// credentials on screen and goes on once the page says Session active.
func TestSessionHandsBackAfterEarlyResume(t *testing.T) {
	s := &fakeSurface{answer: func(tool string, n int) agent.Result {
		switch {
		case tool == "browser_observe" && n == 0:
			return page("Sign in")
		case tool == "browser_observe":
			return page("Session active")
		case tool == "browser_handoff":
			return okResult(map[string]any{"status": "paused", "next": "user_resume"})
		}
		t.Fatalf("unexpected call %s", tool)
		return agent.Result{}
	}}
	a, eng := newWalk(t, s)
	if err := a.Run(context.Background(), Select("session")); err != nil {
		t.Fatalf("Run: %v\n%s", err, activity(eng))
	}
	if n := s.count("browser_handoff"); n != 1 {
		t.Errorf("handoffs = %d, want 1", n)
	}
	log := activity(eng)
	for _, want := range []string{`"` + User + `"`, `"` + Password + `"`, "press r", "The journey is complete"} {
		if !strings.Contains(log, want) {
			t.Errorf("the activity log lacks %q:\n%s", want, log)
		}
	}
}

// TestSessionGivesUpAfterBoundedTries: an operator who never signs in ends
// the walk with an unexpected outcome, not an endless loop.
func TestSessionGivesUpAfterBoundedTries(t *testing.T) {
	s := &fakeSurface{answer: func(tool string, n int) agent.Result {
		if tool == "browser_observe" {
			return page("Sign in")
		}
		return okResult(map[string]any{"status": "paused", "next": "user_resume"})
	}}
	a, _ := newWalk(t, s)
	err := a.Run(context.Background(), Select("session"))
	var ue *UnexpectedError
	if !errors.As(err, &ue) || ue.Step != "session" {
		t.Fatalf("Run = %v, want an unexpected outcome of step session", err)
	}
	if n := s.count("browser_observe"); n != signInTries {
		t.Errorf("observes = %d, want %d", n, signInTries)
	}
}

// TestRefusalSaysWhyAndHowToQuit: a refusal ends the walk with a line in
// the operator's words and the keys that quit.
func TestRefusalSaysWhyAndHowToQuit(t *testing.T) {
	for code, why := range map[errcode.Code]string{
		errcode.UserDenied: "you denied the review",
		errcode.Timeout:    "nobody answered the review in time",
	} {
		s := &fakeSurface{answer: func(string, int) agent.Result { return failResult(code) }}
		a, eng := newWalk(t, s)
		err := a.Run(context.Background(), Select("open"))
		if !errors.Is(err, ErrStopped) {
			t.Fatalf("%s: Run = %v, want ErrStopped", code, err)
		}
		acts := eng.Snapshot().Activity
		last := acts[len(acts)-1].Text
		if !strings.Contains(last, why) || !strings.Contains(last, "Press q, then y") {
			t.Errorf("%s: closing line %q", code, last)
		}
	}
}

// A take-over that ends the demo (t at a review) leaves a banner that
// says so, not "press r to resume" with nothing left to run (the twelfth
// walk pressed r and nothing happened).
func TestTakeOverThatEndsTheDemoSaysItEnded(t *testing.T) {
	s := &fakeSurface{answer: func(string, int) agent.Result { return failResult(errcode.Paused) }}
	a, eng := newWalk(t, s)
	if err := eng.TakeOver("demo"); err != nil {
		t.Fatal(err)
	}
	if err := a.Run(context.Background(), Select("open")); !errors.Is(err, ErrStopped) {
		t.Fatalf("Run = %v, want ErrStopped", err)
	}
	c := eng.Snapshot().Conversations[0]
	if !c.Paused || c.PauseNote != endedNote {
		t.Fatalf("paused %v, banner note %q, want %q", c.Paused, c.PauseNote, endedNote)
	}
}

// TestEveryStepSaysWhatToPress: the screen is all a newcomer has, so each
// step's narration says which key to press or that there is none.
func TestEveryStepSaysWhatToPress(t *testing.T) {
	for _, s := range Journey() {
		if !strings.Contains(s.Says, "press") { // "press a", "press ↓", or "Nothing to press"
			t.Errorf("step %s does not say what to press: %q", s.Name, s.Says)
		}
		if strings.HasPrefix(s.Says, "demo:") {
			t.Errorf("step %s repeats the conversation's name: %q", s.Name, s.Says)
		}
	}
}

// TestHeadlessSignsInForTheOperator: without a window the console's
// SignIn stands in for the person's hands, the narration says so instead
// of pointing at a window, and no tool call types anything.
func TestHeadlessSignsInForTheOperator(t *testing.T) {
	s := &fakeSurface{answer: func(tool string, _ int) agent.Result {
		t.Fatalf("unexpected tool call %s", tool)
		return agent.Result{}
	}}
	a, eng := newWalk(t, s)
	var signedIn []string
	a.cfg.SignIn = func(_ context.Context, tab string) error {
		signedIn = append(signedIn, tab)
		return nil
	}
	if err := a.Run(context.Background(), Select("await-resume")); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if len(signedIn) != 1 || signedIn[0] != "t1" {
		t.Errorf("SignIn calls = %v, want one on t1", signedIn)
	}
	log := activity(eng)
	if !strings.Contains(log, "--headless") || !strings.Contains(log, "Signed in") || strings.Contains(log, "In the Chromium window") {
		t.Errorf("headless narration:\n%s", log)
	}
}

// TestHeadlessBannerAsksForNoTyping: while the console signs in for the
// operator, and after, the take-over banner's note (the state every screen
// renders) says so and asks for r, never for typing (issue 25).
func TestHeadlessBannerAsksForNoTyping(t *testing.T) {
	a, eng, note := pausedWalk(t)
	var during string
	a.cfg.SignIn = func(context.Context, string) error {
		during = note()
		return nil
	}
	// The walk waits for r; the note it leaves is what the banner shows.
	after := awaitResumeNote(t, a, eng, note, func(n string) bool { return strings.Contains(n, "signed in for you") })
	for _, n := range []string{during, after} {
		if !strings.Contains(n, "nothing to type") || !strings.Contains(strings.ToLower(n), "press r") {
			t.Errorf("banner note %q does not say there is nothing to type and r resumes", n)
		}
		for _, typing := range []string{"i to type", "Sign in or", "type and click"} {
			if strings.Contains(n, typing) {
				t.Errorf("banner note %q asks for typing (%q)", n, typing)
			}
		}
	}
	if !strings.Contains(during, "signing in for you") {
		t.Errorf("note while signing in: %q", during)
	}
	if got := note(); got != "" {
		t.Errorf("the note outlived the take-over: %q", got)
	}
}

// TestHeadedBannerSaysWhatToType: with a window, the take-over banner's
// note carries the credentials and the keys, so what to type stays on
// screen when the log has no room (80×24 with the page view open showed
// no log line); it goes with the take-over.
func TestHeadedBannerSaysWhatToType(t *testing.T) {
	a, eng, note := pausedWalk(t)
	n := awaitResumeNote(t, a, eng, note, func(n string) bool { return n != "" })
	for _, want := range []string{`"` + User + `"`, `"` + Password + `"`, "One-time code empty", "v then i", "press r"} {
		if !strings.Contains(n, want) {
			t.Errorf("banner note %q lacks %q", n, want)
		}
	}
	if got := note(); got != "" {
		t.Errorf("the note outlived the take-over: %q", got)
	}
}

// pausedWalk is a walk of the demo conversation taken over (the handoff's
// pause) with no tool call expected, and the take-over note it shows.
func pausedWalk(t *testing.T) (*Agent, *consent.Engine, func() string) {
	t.Helper()
	s := &fakeSurface{answer: func(tool string, _ int) agent.Result {
		t.Fatalf("unexpected tool call %s", tool)
		return agent.Result{}
	}}
	a, eng := newWalk(t, s)
	if err := eng.TakeOver("demo"); err != nil {
		t.Fatal(err)
	}
	note := func() string {
		for _, c := range eng.Snapshot().Conversations {
			if c.ID == "demo" {
				return c.PauseNote
			}
		}
		return ""
	}
	return a, eng, note
}

// awaitResumeNote runs the walk's await-resume step until the take-over
// note satisfies ready, then resumes and waits for the step to end; it
// returns the note as it was before the resume.
func awaitResumeNote(t *testing.T, a *Agent, eng *consent.Engine, note func() string, ready func(string) bool) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx, Select("await-resume")) }()
	ch, stop := eng.Changes()
	defer stop()
	for !ready(note()) {
		select {
		case <-ch:
		case <-ctx.Done():
			t.Fatalf("no take-over note as wanted; the note is %q", note())
		}
	}
	n := note()
	if err := eng.Resume("demo"); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	return n
}
