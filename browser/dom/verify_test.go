package dom

import (
	"context"
	"strings"
	"testing"

	"github.com/tabwarden/tabwarden/consent/errcode"
)

func TestVerify(t *testing.T) {
	st := startSite(t)
	page, tab := openTab(t, st.URL+"/dom/basic.html", Options{})
	for _, c := range []struct {
		kind, value string
		want        bool
	}{
		{TextContains, "Saved 0", true},
		{TextContains, "Saved  0", true}, // whitespace folds
		{TextContains, "Saved 1", false},
		{TextAbsent, "Saved 1", true},
		{TextAbsent, "Saved 0", false},
		{TextContains, "Inside nothing", false},
		{URLIs, st.URL + "/dom/basic.html", true},
		{URLIs, st.URL + "/dom/next.html", false},
		{TitleContains, "dom basics", true},
		{TitleContains, "Checkout", false},
		{ElementVisible, `button "Add to cart"`, true},
		{ElementVisible, `button Add to cart`, true},
		{ElementVisible, `button "Shadow button"`, true},
		{ElementVisible, `button "Bottom button"`, true}, // rendered, below the fold
		{ElementVisible, `button "Hidden action"`, false},
		{ElementVisible, `link "Add to cart"`, false},
	} {
		r, err := tab.Verify(testCtx(t), c.kind, c.value)
		if err != nil {
			t.Fatalf("%s %q: %v", c.kind, c.value, err)
		}
		if r.Verified != c.want || r.Evidence == "" {
			t.Errorf("%s %q = %+v, want %v", c.kind, c.value, r, c.want)
		}
	}
	r, _ := tab.Verify(testCtx(t), ElementVisible, `button "Add to cartx"`)
	if !strings.Contains(r.Evidence, `"Add to cart"`) {
		t.Errorf("a failed element_visible should name what is there: %q", r.Evidence)
	}
	for _, c := range [][2]string{{TextContains, ""}, {TextAbsent, "  "}, {"text_matches", "x"}, {ElementVisible, "button"}} {
		_, err := tab.Verify(testCtx(t), c[0], c[1])
		wantCode(t, err, errcode.InvalidAssertion)
	}

	// Verify follows the page: after a click the text changed.
	o := observe(t, tab, ObserveRequest{})
	mustAct(t, tab, o.ID, Action{Type: "click", Ref: find(t, o, "button", "Add to cart").Ref})
	st.record(t)
	if r, err := tab.Verify(testCtx(t), TextContains, "Saved 1"); err != nil || !r.Verified {
		t.Fatalf("after click: %+v %v", r, err)
	}

	// A cancelled or timed-out verify is an error, never verified.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r, err := tab.Verify(ctx, TextAbsent, "nothing like this")
	if r.Verified || errcode.Of(err) != errcode.Canceled {
		t.Fatalf("cancelled verify: %+v %v", r, err)
	}
	// A closed tab is a lost target.
	_ = page.Close()
	r, err = tab.Verify(testCtx(t), TextAbsent, "nothing like this")
	if r.Verified || err == nil {
		t.Fatalf("verify on a closed tab: %+v %v", r, err)
	}
}
