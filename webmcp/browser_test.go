package webmcp

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tabwarden/tabwarden/consent/errcode"
)

// waitFrames waits until the four fixture frames reported their
// registration outcome, so a listing sees the settled page.
func waitFrames(t *testing.T, f *fixture) map[string]string {
	got := map[string]string{}
	for len(got) < 4 {
		name, outcome, _ := strings.Cut(wait(t, f.frameDone, "frame registrations"), ":")
		got[name] = outcome
	}
	return got
}

// waitHeardFrames waits, in native mode, until the Site heard what
// tools.html registered: its own six tools and each frame's that the
// browser accepted (outcomes from waitFrames).
func waitHeardFrames(t *testing.T, r *tabRig, outcomes map[string]string) {
	t.Helper()
	if r.site.Mode() != ModeNative {
		return
	}
	n := 6
	for _, o := range outcomes {
		if o == "registered" {
			n++
		}
	}
	waitHeard(t, r.site, n)
}

func TestDiscoveryAndCall(t *testing.T) {
	bothModes(t, func(t *testing.T, native bool) {
		f := newFixture(t)
		r := openTab(t, native, f, "/tools.html", Options{})
		outcomes := waitFrames(t, f)
		waitHeardFrames(t, r, outcomes)
		if native {
			// What Chromium itself does with the frame rule.
			if outcomes["frame_cross"] != "refused:NotAllowedError" || outcomes["frame_blocked"] != "refused:NotAllowedError" ||
				outcomes["frame_delegated"] != "registered" || outcomes["frame_same"] != "registered" {
				t.Fatalf("native frame outcomes %v", outcomes)
			}
		}
		l := r.list()
		got := names(l)
		slices.Sort(got)
		want := []string{"frame_delegated", "frame_same", "read_session", "read_status", "save_draft", "slow_save"}
		if !slices.Equal(got, want) {
			t.Fatalf("listed %v, want %v (rejected %+v)", got, want, l.RejectedTools)
		}
		for _, name := range []string{"find_drafts", "import_drafts"} {
			if !hasRejected(l, name, errcode.UnsupportedSchema) {
				t.Errorf("%s: not rejected as unsupported_schema: %+v", name, l.RejectedTools)
			}
		}
		if l.Support.Mode != r.site.Mode() {
			t.Fatalf("support %+v", l.Support)
		}
		for _, tl := range l.Tools {
			if !strings.HasPrefix(tl.ToolID, "wt_") || strings.Contains(tl.ToolID, tl.Name) {
				t.Fatalf("toolId %q is not opaque", tl.ToolID)
			}
			if tl.Name == "frame_delegated" && !strings.Contains(tl.Origin, "localhost") {
				t.Fatalf("delegated frame origin %s", tl.Origin)
			}
		}
		if n := f.recordCount(); n != 0 {
			t.Fatalf("%d records before any invoke", n)
		}
		// With site isolation on, the delegated cross-site frame is an
		// out-of-process frame served by its own session.
		r.broker.mu.Lock()
		h := r.broker.handles[toolID(t, l, "frame_delegated")]
		r.broker.mu.Unlock()
		if r.site.sessionFor(h.frame) == "" {
			t.Fatal("the delegated cross-site frame was not served by a child session")
		}

		ctx := context.Background()
		save := toolID(t, l, "save_draft")
		// Invalid input never reaches the page.
		for _, bad := range []string{`{}`, `{"title":""}`, `{"title":"x","extra":1}`, `{"title":5}`, `[]`} {
			if _, err := r.broker.Prepare(ctx, r.conv, r.tab, save, json.RawMessage(bad)); codeOf(err) != errcode.InvalidInput {
				t.Fatalf("input %s: %v", bad, err)
			}
		}
		c, err := r.broker.Prepare(ctx, r.conv, r.tab, save, json.RawMessage(`{"title":"Quarterly SECRET-TITLE"}`))
		if err != nil {
			t.Fatal(err)
		}
		tc := c.ToolCall()
		if tc.ToolName != "save_draft" || strings.Contains(tc.InputSummary, "SECRET-TITLE") || !strings.Contains(tc.InputSummary, "title") {
			t.Fatalf("review detail %+v", tc)
		}
		if err := c.Fresh(); err != nil {
			t.Fatal(err)
		}
		if n := f.recordCount(); n != 0 {
			t.Fatalf("%d records before invoke", n)
		}
		res, err := c.Invoke(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var out struct {
			Saved int    `json:"saved"`
			Title string `json:"title"`
		}
		if err := json.Unmarshal(res, &out); err != nil || out.Saved != 1 || out.Title != "Quarterly SECRET-TITLE" {
			t.Fatalf("result %s %v", res, err)
		}
		if n := f.recordCount(); n != 1 {
			t.Fatalf("%d records after one invoke", n)
		}
		if _, err := c.Invoke(ctx); err == nil || f.recordCount() != 1 {
			t.Fatal("a prepared call ran twice")
		}
		d := c.Disclosure(res)
		if d.Result != string(res) || d.Size != len(res) || len(d.SHA256) != 64 {
			t.Fatalf("disclosure %+v", d)
		}

		res, err = r.call(ctx, toolID(t, l, "read_status"), "")
		if err != nil || !strings.Contains(string(res), `"saved":1`) {
			t.Fatalf("read_status %s %v", res, err)
		}
		res, err = r.call(ctx, toolID(t, l, "read_session"), "{}")
		if err != nil || !strings.Contains(string(res), f.canary) {
			t.Fatalf("read_session %s %v", res, err)
		}
		res, err = r.call(ctx, toolID(t, l, "frame_delegated"), "{}")
		if err != nil || !strings.Contains(string(res), `"frame":"frame_delegated"`) {
			t.Fatalf("frame_delegated %s %v", res, err)
		}
		if n := f.recordCount(); n != 1 {
			t.Fatalf("%d records after read-only calls", n)
		}
	})
}

func TestHandles(t *testing.T) {
	bothModes(t, func(t *testing.T, native bool) {
		f, r := toolsTab(t, native, Options{})
		ctx := context.Background()
		l := r.list()
		id := toolID(t, l, "read_status")
		if again := toolID(t, r.list(), "read_status"); again != id {
			t.Fatalf("listing twice changed the toolId: %s → %s", id, again)
		}
		if _, err := r.broker.Prepare(ctx, "conv-b", r.tab, id, nil); codeOf(err) != errcode.WrongConversation {
			t.Fatalf("foreign handle: %v", err)
		}
		if _, err := r.broker.List(ctx, "conv-b", r.tab); codeOf(err) != errcode.WrongConversation {
			t.Fatalf("foreign list: %v", err)
		}
		if _, err := r.broker.Prepare(ctx, r.conv, r.tab, "wt_forged", nil); codeOf(err) != errcode.StaleTool {
			t.Fatalf("unknown handle: %v", err)
		}
		if _, err := r.broker.Prepare(ctx, r.conv, "other-tab", id, nil); codeOf(err) != errcode.StaleTool {
			t.Fatalf("handle for another tab: %v", err)
		}

		// Unregistration and a changed descriptor, through the page's own API.
		_, err := r.page.Eval(`() => { window.ac = new AbortController();
				return document.modelContext.registerTool({name: "mutable", description: "v1", execute: () => 1}, {signal: window.ac.signal}); }`)
		if err != nil {
			t.Fatal(err)
		}
		l = r.list()
		mutable := toolID(t, l, "mutable")
		c, err := r.broker.Prepare(ctx, r.conv, r.tab, mutable, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := r.page.Eval(`() => { window.ac.abort(); }`); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "unregistration", func() bool { return codeOf(c.Fresh()) == errcode.StaleTool })
		if _, err := c.Invoke(ctx); codeOf(err) != errcode.StaleTool {
			t.Fatalf("invoke after unregistration: %v", err)
		}
		if _, err := r.page.Eval(`() => document.modelContext.registerTool({name: "mutable", description: "v2 does something else", execute: () => 2})`); err != nil {
			t.Fatal(err)
		}
		// Same name, new descriptor: the old handle stays stale.
		waitFor(t, "re-registration", func() bool {
			_, err := r.broker.Prepare(ctx, r.conv, r.tab, mutable, nil)
			return codeOf(err) == errcode.StaleTool && slices.Contains(names(r.list()), "mutable")
		})

		// Navigation: every handle of the old document is stale.
		id = toolID(t, r.list(), "read_status")
		r.navigate(f.URL + "/tools.html")
		if _, err := r.broker.Prepare(ctx, r.conv, r.tab, id, nil); codeOf(err) != errcode.StaleTool {
			t.Fatalf("after navigation: %v", err)
		}
		waitFrames(t, f)
		if _, err := r.call(ctx, toolID(t, r.list(), "read_status"), ""); err != nil {
			t.Fatal(err)
		}
	})
}

// waitFor polls a CDP-observed condition; the events that change it are the
// page's, with no signal we could wait on from here.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// A page's dedicated worker runs while a Site follows the tab: the Site
// auto-attaches with waitForDebuggerOnStart, and Chromium holds a worker
// waiting for a debugger even when the auto-attach filter leaves workers
// out, so the Site must attach and release it.
func TestPageWorkerRunsUnderASite(t *testing.T) {
	bothModes(t, func(t *testing.T, native bool) {
		f := newFixture(t)
		openTab(t, native, f, "/worker.html", Options{})
		wait(t, f.workerRan, "the page's worker to run")
	})
}
