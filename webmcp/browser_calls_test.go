package webmcp

import (
	"context"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tabwarden/tabwarden/consent/errcode"
)

func TestExecutionTimeoutCancelsInPage(t *testing.T) {
	bothModes(t, func(t *testing.T, native bool) {
		f, r := toolsTab(t, native, Options{ExecTimeout: 1500 * time.Millisecond})
		_, err := r.call(context.Background(), toolID(t, r.list(), "slow_save"), `{"delayMs":600000}`)
		var ce *errcode.Error
		if codeOf(err) != errcode.ExecutionTimeout || !asError(err, &ce) || !ce.Dispatched || !ce.MayHaveChangedState {
			t.Fatalf("slow_save: %#v", err)
		}
		wait(t, f.cancelled, "in-page cancellation")
		if n := f.recordCount(); n != 0 {
			t.Fatalf("%d records after a cancelled call", n)
		}
	})
}

func TestTakeOverCancelsAndQuota(t *testing.T) {
	bothModes(t, func(t *testing.T, native bool) {
		f, r := toolsTab(t, native, Options{})
		l := r.list()
		slow := toolID(t, l, "slow_save")
		errs := make(chan error, 4)
		for i := 0; i < 4; i++ {
			c, err := r.broker.Prepare(context.Background(), r.conv, r.tab, slow, json.RawMessage(`{"delayMs":600000}`))
			if err != nil {
				t.Fatal(err)
			}
			go func() { _, err := c.Invoke(context.Background()); errs <- err }()
		}
		for i := 0; i < 4; i++ {
			wait(t, f.started, "slow_save running in the page")
		}
		// A fifth concurrent call is refused before dispatch.
		_, err := r.call(context.Background(), toolID(t, l, "read_status"), "")
		var ce *errcode.Error
		if codeOf(err) != errcode.TooManyRequests || !asError(err, &ce) || ce.Dispatched {
			t.Fatalf("fifth call: %#v", err)
		}
		// Take-over: the console cancels the conversation's running calls.
		r.broker.CancelConversation("someone-else")
		select {
		case err := <-errs:
			t.Fatalf("another conversation's cancel ended a call: %v", err)
		default:
		}
		r.broker.CancelConversation(r.conv)
		for i := 0; i < 4; i++ {
			if err := <-errs; codeOf(err) != errcode.Canceled {
				t.Fatalf("cancelled call: %v", err)
			}
		}
		wait(t, f.cancelled, "in-page cancellation")
		if n := f.recordCount(); n != 0 {
			t.Fatalf("%d records after cancelled calls", n)
		}
		// The slots are free again.
		if _, err := r.call(context.Background(), toolID(t, l, "read_status"), ""); err != nil {
			t.Fatal(err)
		}
	})
}

func TestOperationContextCancels(t *testing.T) {
	f := newFixture(t)
	r := openTab(t, false, f, "/tools.html", Options{})
	waitFrames(t, f)
	ctx, cancel := context.WithCancel(context.Background())
	c, err := r.broker.Prepare(ctx, r.conv, r.tab, toolID(t, r.list(), "slow_save"), json.RawMessage(`{"delayMs":600000}`))
	if err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, 1)
	go func() { _, err := c.Invoke(ctx); errs <- err }()
	wait(t, f.started, "slow_save running")
	cancel() // consent ends the op's context on take-over
	if err := <-errs; codeOf(err) != errcode.Canceled {
		t.Fatalf("%v", err)
	}
	wait(t, f.cancelled, "in-page cancellation")
}

func TestHostilePage(t *testing.T) {
	bothModes(t, func(t *testing.T, native bool) {
		f := newFixture(t)
		r := openTab(t, native, f, "/hostile.html", Options{})
		// The title is set once every registration was started; the
		// page's request comes once each has settled, which is what
		// discovery must see (registerTool is asynchronous).
		registered, cerr := strconv.Atoi(wait(t, f.hostileReady, "every registration settled"))
		if cerr != nil {
			t.Fatalf("hostile page's registration count: %v", cerr)
		}
		if native {
			// The listing reads what the Site heard (the polyfill's reads
			// the page itself).
			waitHeard(t, r.site, registered)
		}
		start := time.Now()
		l := r.list()
		if el := time.Since(start); el > 5*time.Second {
			t.Fatalf("discovery took %v", el)
		}
		listed := map[string]bool{}
		for _, tl := range l.Tools {
			listed[tl.Name] = true
		}
		if !listed["ok_tool"] || !listed["huge_result"] {
			t.Fatalf("valid tools hidden: %v", names(l))
		}
		if len(l.Tools) != MaxToolsPerFrame {
			t.Fatalf("listed %d tools, want the frame quota %d", len(l.Tools), MaxToolsPerFrame)
		}
		for _, name := range []string{"h_format", "h_pattern", "h_pattern_properties", "h_defs_pattern", "h_defs_format",
			"h_defs_pattern_properties", "h_remote_ref", "h_pointer_ref", "h_schema_65k", "h_depth_33", "h_nodes_5001"} {
			if !hasRejected(l, name, errcode.UnsupportedSchema) {
				t.Errorf("%s not rejected as unsupported_schema", name)
			}
			if listed[name] {
				t.Errorf("%s listed", name)
			}
		}
		bulkRejected := 0
		for _, rj := range l.RejectedTools {
			if rj.Name != nil && strings.HasPrefix(*rj.Name, "bulk_") && rj.Code == errcode.InvalidSiteTool {
				bulkRejected++
			}
			if rj.Origin != f.URL {
				t.Errorf("rejected entry origin %q", rj.Origin)
			}
		}
		if bulkRejected != 200-(MaxToolsPerFrame-2) {
			t.Errorf("%d bulk tools rejected", bulkRejected)
		}
		// Bad names: Chromium refuses them at registerTool, so only the
		// polyfill path sees them; each is one entry without a name.
		nameless := 0
		for _, rj := range l.RejectedTools {
			if rj.Name == nil && rj.Code == errcode.InvalidSiteTool {
				nameless++
			}
		}
		if !native && nameless != 5 {
			t.Errorf("%d bad-name entries, want 5", nameless)
		}
		if listed["hanging_getter"] {
			t.Error("a registration whose getter threw was listed")
		}
		// The 1 MiB result is refused after the call, before anyone sees it.
		_, err := r.call(context.Background(), toolID(t, l, "huge_result"), "")
		if codeOf(err) != errcode.ResultTooLarge {
			t.Fatalf("huge_result: %v", err)
		}
		// The page still works for ordinary CDP.
		if _, err := r.page.Timeout(5 * time.Second).Element("h1"); err != nil {
			t.Fatal(err)
		}
	})
}

func TestPolyfillBridgeUnreachable(t *testing.T) {
	f := newFixture(t)
	r := openTab(t, false, f, "/page-attack.html", Options{})
	body := r.page.MustElement("body")
	for attr, want := range map[string]string{
		"data-construct": "refused", "data-redefine": "refused", "data-delete": "refused",
		"data-own-keys": "[]", "data-expando": "refused", "data-leaked": "none",
	} {
		if got, _ := body.Attribute(attr); got == nil || *got != want {
			t.Errorf("%s = %v, want %s", attr, strPtr(got), want)
		}
	}
	if got, _ := body.Attribute("data-proto-keys"); got == nil || strings.Contains(strings.ToLower(*got), "bridge") {
		t.Errorf("prototype exposes %v", strPtr(got))
	}
	if n := f.recordCount(); n != 0 {
		t.Fatalf("%d records before the host invoked anything", n)
	}
	l := r.list()
	if got := names(l); len(got) != 1 || got[0] != "victim" {
		t.Fatalf("listed %v", got)
	}
	if _, err := r.call(context.Background(), l.Tools[0].ToolID, ""); err != nil {
		t.Fatal(err)
	}
	if n := f.recordCount(); n != 1 {
		t.Fatalf("%d records after one invoke", n)
	}
	// The page's patched builtins saw nothing of the host's call.
	r.page.MustEval(`() => { window.report(); }`)
	if got, _ := body.Attribute("data-leaked"); got == nil || *got != "none" {
		t.Fatalf("polyfill used page-patched builtins: %v", strPtr(got))
	}
	// A page cannot answer for the host: calling its own tool does not go
	// through the broker and is just the page's own fetch.
	if _, err := r.page.Eval(`() => document.modelContext.executeTool("victim", {})`); err != nil {
		t.Fatal(err)
	}
	wait(t, f.recorded, "first record")
	wait(t, f.recorded, "the page's own call")
}

func strPtr(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}

func asError(err error, target **errcode.Error) bool {
	e, ok := err.(*errcode.Error)
	if ok {
		*target = e
	}
	return ok
}

func TestFrameCannotRegisterForAnother(t *testing.T) {
	bothModes(t, func(t *testing.T, native bool) {
		f := newFixture(t)
		r := openTab(t, native, f, "/frame-attack.html", Options{})
		outcome := wait(t, f.frameDone, "the attacking frame")
		if !strings.HasPrefix(outcome, "attacker:registered,attack:") || strings.HasSuffix(outcome, "attack:registered") {
			t.Fatalf("attack outcome %q", outcome)
		}
		l := r.list()
		got := names(l)
		if len(got) != 2 || !slices.Contains(got, "parent_tool") || !slices.Contains(got, "attacker") {
			t.Fatalf("listed %v", got)
		}
		for _, tl := range l.Tools {
			want := f.URL
			if tl.Name == "attacker" {
				want = strings.Replace(f.URL, "127.0.0.1", "localhost", 1)
			}
			if tl.Origin != want {
				t.Fatalf("%s attributed to %s, want %s", tl.Name, tl.Origin, want)
			}
		}
	})
}
