package browser

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/go-rod/rod/lib/proto"

	"github.com/tabwarden/tabwarden/agent/demo/fixture/fixturetest"
	"github.com/tabwarden/tabwarden/consent"
	"github.com/tabwarden/tabwarden/policy"
)

// eval runs js in tab's page (a test's stand-in for the page or the
// person, never how the console reads pages) and decodes its value.
func (e *env) eval(t *testing.T, tab consent.TabID, js string, out any) {
	t.Helper()
	res, err := proto.RuntimeEvaluate{Expression: js, ReturnByValue: true, AwaitPromise: true}.Call(tabClient(t, e.b, tab))
	if err != nil || res.ExceptionDetails != nil {
		t.Fatalf("eval %s: %v %+v", js, err, res.ExceptionDetails)
	}
	if out != nil {
		if err := json.Unmarshal([]byte(res.Result.Value.JSON("", "")), out); err != nil {
			t.Fatal(err)
		}
	}
}

// With uploads blocked, a click on a file input opens no chooser and picks
// no file (the activity log says why), and a form that carries a file
// anyway never reaches the server.
func TestPolicyBlockedUploadsRefuseTheFileChooser(t *testing.T) {
	a := fixturetest.Start(t)
	pol, err := policy.Parse("org.json", []byte(`{"execution":{"blockBrowserUploads":true}}`))
	if err != nil {
		t.Fatal(err)
	}
	e := launch(t, func(o *Options) { o.Policy = pol })
	tab := e.newTab(t)
	e.open(t, tab, a.URL, a.URL+"/upload.html")

	var at struct{ X, Y float64 }
	e.eval(t, tab, `(() => { const r = document.querySelector("input[type=file]").getBoundingClientRect();
		return {X: r.x + r.width / 2, Y: r.y + r.height / 2}; })()`, &at)
	e.click(t, tab, at.X, at.Y)
	e.gate.until(t, "the upload-blocked note", func(g *fakeGate) bool { return contains(g.notes, policy.MsgUploadBlocked) })
	var files int
	e.eval(t, tab, `document.querySelector("input[type=file]").files.length`, &files)
	if files != 0 {
		t.Fatalf("the refused chooser left %d files in the input", files)
	}

	// A file put there anyway (as a page could not, but DevTools can) and
	// the form submitted: the POST is failed before it leaves Chromium.
	file := filepath.Join(t.TempDir(), "secret.txt")
	if err := os.WriteFile(file, []byte("secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	c := tabClient(t, e.b, tab)
	doc, err := proto.DOMGetDocument{}.Call(c)
	if err != nil {
		t.Fatal(err)
	}
	q, err := proto.DOMQuerySelector{NodeID: doc.Root.NodeID, Selector: "input[type=file]"}.Call(c)
	if err != nil {
		t.Fatal(err)
	}
	if err := (proto.DOMSetFileInputFiles{Files: []string{file}, NodeID: q.NodeID}).Call(c); err != nil {
		t.Fatal(err)
	}
	e.eval(t, tab, `document.querySelector("form").submit()`, nil)
	e.waitURL(t, tab, "about:blank")
	if n := a.Count("/upload"); n != 0 || len(a.Uploads()) != 0 {
		t.Fatalf("the upload reached the server: %d requests, %d files", n, len(a.Uploads()))
	}
}
