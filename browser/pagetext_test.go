package browser

import (
	"strings"
	"testing"

	"github.com/tabwarden/tabwarden/agent/demo/fixture/fixturetest"
)

// PageText reads the page's accessibility tree: its fields and button by
// name, in document order, with no field value (issue 25 §11).
func TestPageTextReadsThePage(t *testing.T) {
	e := launch(t, nil)
	site := fixturetest.Start(t)
	tab := e.newTab(t)
	e.open(t, tab, site.URL, site.URL+"/pageview.html")
	lines, err := e.b.PageText(testCtx(t), tab)
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Join(lines, "\n")
	t.Logf("page text:\n%s", text)
	user, pass, button := strings.Index(text, "[textbox] User name"), strings.Index(text, "[textbox] Password"), strings.Index(text, "[button] Sign in")
	if user < 0 || pass < user || button < pass {
		t.Fatalf("the page text lacks the form in order:\n%s", text)
	}
}
