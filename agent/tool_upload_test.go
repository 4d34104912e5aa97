package agent_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"os"
	"regexp"
	"testing"

	"github.com/tabwarden/tabwarden/agent"
	"github.com/tabwarden/tabwarden/consent"
	"github.com/tabwarden/tabwarden/consent/errcode"
	"github.com/tabwarden/tabwarden/policy"
)

// uploadBytes is binary on purpose: every byte value, so a text-mode or
// re-encoding slip anywhere on the path shows up as a mismatch.
func uploadBytes() []byte {
	b := make([]byte, 0, 3*256+7)
	for i := 0; i < 3; i++ {
		for c := 0; c < 256; c++ {
			b = append(b, byte(c))
		}
	}
	return append(b, "trailer"...)
}

// fileRefOf finds the file input in an observation: file inputs are listed
// as sensitive (browser_act refuses them).
func fileRefOf(t *testing.T, snapshot string) string {
	t.Helper()
	m := regexp.MustCompile(`(?m)^(e\d+) \S+ "File".*\bsensitive\b`).FindStringSubmatch(snapshot)
	if m == nil {
		t.Fatalf("no file input in the observation:\n%s", snapshot)
	}
	return m[1]
}

func uploadCall(tab, obs, ref, name string, data []byte) map[string]any {
	return map[string]any{"tabId": tab, "observationId": obs, "ref": ref, "filename": name,
		"contentBase64": base64.StdEncoding.EncodeToString(data)}
}

func TestE2EUploadNonASCIINameReachesTheSiteExactly(t *testing.T) {
	e := newE2E(t) // launches the shared Chromium, which must not see TMPDIR below
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp) // where the console stages the file
	tab := e.open("/upload.html")
	obs, snap := e.observe(tab, true)
	ref := fileRefOf(t, snap)

	const name = "résumé-東京.pdf"
	data := uploadBytes()
	sum := sha256.Sum256(data)

	// browser_act may not touch a file input; only browser_upload may.
	wantFail(t, e.call("browser_act", map[string]any{"tabId": tab, "observationId": obs,
		"action": map[string]any{"type": "click", "ref": ref}}), errcode.SignInRequired, false)
	obs, _ = e.observe(tab, false)

	p := e.start("browser_upload", uploadCall(tab, obs, ref, name, data))
	r := e.op.Await(consent.KindUpload, e.site.URL)
	if r.Upload == nil || r.Upload.Filename != name || r.Upload.Size != int64(len(data)) || r.Upload.SHA256 != hex.EncodeToString(sum[:]) {
		t.Fatalf("upload review shows %+v, want %s, %d bytes, sha256 %x", r.Upload, name, len(data), sum)
	}
	e.op.Decide(r, true)
	got := wantOK(t, p.result())
	if got["dispatched"] != true || got["outcome"] != "not_yet_verified" {
		t.Fatalf("upload receipt = %v", got)
	}
	if left, err := os.ReadDir(tmp); err != nil || len(left) != 0 {
		t.Fatalf("staged files outlive the upload: %v %v", left, err)
	}
	if n := e.site.Count("/upload"); n != 0 {
		t.Fatalf("the file reached the site before the form was submitted (%d requests)", n)
	}

	obs, snap = e.observe(tab, false)
	p = e.start("browser_act", click(tab, obs, refOf(t, snap, "button", "Upload")))
	e.op.Approve(consent.KindAction, e.site.URL)
	wantOK(t, p.result())
	// The fixture counts a request before handling it; the tab showing the
	// response is what says the handler finished.
	e.awaitTabLoaded(tab, e.site.URL+"/upload")
	ups := e.site.Uploads()
	if len(ups) != 1 {
		t.Fatalf("site received %d uploads, want 1", len(ups))
	}
	if ups[0].Filename != name {
		t.Errorf("site received filename %q, want %q", ups[0].Filename, name)
	}
	if !bytes.Equal(ups[0].Data, data) {
		t.Errorf("site received %d bytes that differ from the %d sent", len(ups[0].Data), len(data))
	}
	if n := reviewsShown(e.conv, consent.KindUpload); n != 1 {
		t.Errorf("%d upload reviews shown, want 1", n)
	}
}

func TestE2EUploadBlockedByPolicyShowsNoReview(t *testing.T) {
	pol, err := policy.Parse("e2e.json", []byte(`{"execution":{"blockBrowserUploads":true}}`))
	if err != nil {
		t.Fatal(err)
	}
	e := newE2E(t, withPolicy(pol))
	tab := e.open("/upload.html")
	obs, snap := e.observe(tab, true)
	ref := fileRefOf(t, snap)
	before := reviewsShown(e.conv, consent.KindUpload)
	wantFail(t, e.call("browser_upload", uploadCall(tab, obs, ref, "a.txt", []byte("secret"))), errcode.UploadBlocked, false)
	if n := reviewsShown(e.conv, consent.KindUpload); n != before {
		t.Errorf("a blocked upload showed %d reviews", n-before)
	}
	if n := e.site.Count("/upload"); n != 0 || len(e.site.Uploads()) != 0 {
		t.Errorf("a blocked upload reached the site (%d requests)", n)
	}
	// The observation was not used: the input is still empty and usable.
	wantFail(t, e.call("browser_upload", uploadCall(tab, obs, ref, "a.txt", nil)), errcode.UploadBlocked, false)
}

func TestE2EUploadOverTheLimitShowsNoReview(t *testing.T) {
	e := newE2E(t, func(c *agent.DispatcherConfig) { c.MaxUploadBytes = 1024 })
	tab := e.open("/upload.html")
	obs, snap := e.observe(tab, true)
	ref := fileRefOf(t, snap)
	before := reviewsShown(e.conv, consent.KindUpload)
	wantFail(t, e.call("browser_upload", uploadCall(tab, obs, ref, "big.bin", make([]byte, 1025))), errcode.UploadTooLarge, false)
	if n := reviewsShown(e.conv, consent.KindUpload); n != before {
		t.Errorf("an oversized upload showed %d reviews", n-before)
	}
	// Exactly at the limit is accepted as far as the review.
	p := e.start("browser_upload", uploadCall(tab, obs, ref, "big.bin", make([]byte, 1024)))
	r := e.op.Await(consent.KindUpload, e.site.URL)
	if r.Upload.Size != 1024 {
		t.Errorf("review size = %d", r.Upload.Size)
	}
	e.op.Decide(r, false)
	wantFail(t, p.result(), errcode.UserDenied, false)
	if len(e.site.Uploads()) != 0 {
		t.Error("a denied upload reached the site")
	}
}

// awaitTabLoaded waits until the engine's view of tab shows url fully loaded.
func (e *e2e) awaitTabLoaded(tab, url string) {
	e.t.Helper()
	changes, stop := e.eng.Changes()
	defer stop()
	for {
		for _, c := range e.eng.Snapshot().Conversations {
			for _, ts := range c.Tabs {
				if string(ts.ID) == tab && ts.URL == url && !ts.Loading {
					return
				}
			}
		}
		select {
		case <-changes:
		case <-e.ctx.Done():
			e.t.Fatalf("tab %s never finished loading %s", tab, url)
		}
	}
}

func TestE2EUploadTargetsOnlyAFileInput(t *testing.T) {
	e := newE2E(t)
	tab := e.open("/upload.html")
	obs, snap := e.observe(tab, true)
	before := reviewsShown(e.conv, consent.KindUpload)
	// The submit button is not a file input: refused before any review.
	wantFail(t, e.call("browser_upload", uploadCall(tab, obs, refOf(t, snap, "button", "Upload"), "a.txt", []byte("x"))), errcode.InvalidAction, false)
	wantFail(t, e.call("browser_upload", uploadCall(tab, "o-unknown", fileRefOf(t, snap), "a.txt", []byte("x"))), errcode.StaleObservation, false)
	wantFail(t, e.call("browser_upload", uploadCall(tab, obs, fileRefOf(t, snap), "../a.txt", []byte("x"))), errcode.InvalidAction, false)
	if n := reviewsShown(e.conv, consent.KindUpload) - before; n != 0 {
		t.Errorf("%d upload reviews for refused uploads", n)
	}
}
