package consent

import "testing"

// A take-over's note (SetPauseNote) is shown only while that take-over
// lasts: set on a conversation that is not paused it is dropped, and a
// resume or the next take-over clears it, so an old note never speaks for
// a new take-over.
func TestPauseNoteLivesWithItsTakeOver(t *testing.T) {
	h := newHarness(t, Config{}).std()
	note := func() string {
		t.Helper()
		for _, c := range h.e.Snapshot().Conversations {
			if c.ID == "c1" {
				return c.PauseNote
			}
		}
		t.Fatal("no conversation c1")
		return ""
	}
	h.e.SetPauseNote("c1", "signed in for you")
	if got := note(); got != "" {
		t.Fatalf("a running conversation keeps note %q", got)
	}
	if err := h.e.TakeOver("c1"); err != nil {
		t.Fatal(err)
	}
	h.e.SetPauseNote("c1", "signed in for you")
	if got := note(); got != "signed in for you" {
		t.Fatalf("paused: note %q, want the one set", got)
	}
	if err := h.e.Resume("c1"); err != nil {
		t.Fatal(err)
	}
	if got := note(); got != "" {
		t.Fatalf("resumed: note %q kept", got)
	}
	if err := h.e.TakeOver("c1"); err != nil {
		t.Fatal(err)
	}
	h.e.SetPauseNote("c1", "first")
	if err := h.e.TakeOver("c1"); err != nil {
		t.Fatal(err)
	}
	if got := note(); got != "" {
		t.Fatalf("a second take-over shows the first one's note %q", got)
	}
}
