package stacktest_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tabwarden/tabwarden/agent"
	"github.com/tabwarden/tabwarden/agent/demo/fixture"
	"github.com/tabwarden/tabwarden/agent/mcpserver"
	"github.com/tabwarden/tabwarden/consent"
	"github.com/tabwarden/tabwarden/consent/audit"
	"github.com/tabwarden/tabwarden/consent/audit/audittest"
	"github.com/tabwarden/tabwarden/internal/stacktest"
	"github.com/tabwarden/tabwarden/internal/stacktest/servetest"
)

// TestTheKitBuildsTheWholeStack: an SDK client's browser_open through the
// MCP server, the dispatcher, the engine and Chromium reaches the fixture
// site once, after the operator approved it; when the test ends its
// Chromium is gone and its profile removed.
func TestTheKitBuildsTheWholeStack(t *testing.T) {
	var pid int
	var profile string
	t.Run("stack", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		defer cancel()
		s := stacktest.Start(t, stacktest.Config{})
		pid, profile = s.Browser.PID(), s.ProfileDir
		site := s.Site(t)
		cs := servetest.Start(t, ctx, s, s.Dispatcher(t)).Connect(t, "", "kit")
		done := make(chan *mcp.CallToolResult, 1)
		go func() {
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "browser_open", Arguments: map[string]any{"url": site.URL + "/"}})
			if err != nil {
				t.Errorf("browser_open: %v", err)
			}
			done <- res
		}()
		if n := len(site.Requests()); n != 0 {
			t.Fatalf("%d requests reached the site before the review", n)
		}
		s.Operator(t, ctx).SelectingQueued().Approve(consent.KindNavigation, site.URL)
		res := <-done
		if res == nil || res.IsError {
			t.Fatalf("browser_open failed: %+v", res)
		}
		if _, err := site.WaitFor(ctx, func(r fixture.Request) bool { return r.Path == "/" }); err != nil {
			t.Fatalf("the approved open never reached the site: %v", err)
		}
		if n := pages(site.Requests()); n != 1 {
			t.Fatalf("%d page requests reached the site, want the one approved", n)
		}
	})
	if pid <= 0 {
		t.Fatalf("the stack reported Chromium pid %d", pid)
	}
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("Chromium (pid %d) outlived its test: kill 0 = %v", pid, err)
	}
	if _, err := os.Stat(profile); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("profile %s outlived its test: %v", profile, err)
	}
}

// TestAToolIsOneValue: a tool added as one value and one registration line
// (StampTool, StampProfile) is published by the MCP server with the schema
// of its argument type, routed by the dispatch, strict about its arguments
// and audited, with no other file touched.
func TestAToolIsOneValue(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	eng := consent.New(consent.Config{ReviewDelay: stacktest.ReviewDelay})
	t.Cleanup(eng.Close)
	calls := &audittest.Memory{}
	d := agent.NewDispatcher(agent.DispatcherConfig{Engine: eng, Browser: stacktest.GoneBrowser{}, Audit: calls, Tools: stacktest.StampProfile.Tools})
	t.Cleanup(d.Close)
	cs := servetest.StartConfig(t, ctx, mcpserver.Config{Surface: d, Engine: eng, Profile: stacktest.StampProfile, Version: "test"}).Connect(t, "", "stamp")
	stamp := stacktest.StampTool.Name

	list, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var published *mcp.Tool
	for _, tool := range list.Tools {
		if tool.Name == stamp {
			published = tool
		}
	}
	if len(list.Tools) != len(stacktest.StampProfile.Tools) || published == nil {
		t.Fatalf("published %d tools without %s, want the profile's %d", len(list.Tools), stamp, len(stacktest.StampProfile.Tools))
	}
	schema, _ := json.Marshal(published.InputSchema)
	var shape struct {
		Required   []string                   `json:"required"`
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if err := json.Unmarshal(schema, &shape); err != nil || !slices.Equal(shape.Required, []string{"text"}) || len(shape.Properties) != 1 {
		t.Fatalf("schema of %s = %s, want the one required property of StampArgs", stamp, schema)
	}
	if published.Annotations == nil || !published.Annotations.ReadOnlyHint {
		t.Errorf("annotations = %+v, want readOnlyHint from the spec", published.Annotations)
	}

	res := stacktest.CallTool(t, cs, stamp, map[string]any{"text": "hi"})
	var got map[string]any
	b, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(b, &got); err != nil || res.IsError || got["stamped"] != "[hi]" || got["conversation"] == "" {
		t.Fatalf("call = %s (error %v)", b, res.IsError)
	}
	if bad := stacktest.CallTool(t, cs, stamp, map[string]any{"text": "hi", "extra": 1}); !bad.IsError {
		t.Fatalf("an unknown argument reached the handler: %+v", bad.StructuredContent)
	}
	var stamped []string
	for _, r := range calls.Records() {
		if r.Kind == audit.KindToolCall && r.Tool == stamp {
			stamped = append(stamped, r.Decision+" "+r.Code)
		}
	}
	if !slices.Equal(stamped, []string{"ok ", "failed invalid_action"}) {
		t.Fatalf("audit of %s = %q, want one record per call", stamp, stamped)
	}
}

// pages counts the requests that reached the site, less the favicon, which
// Chromium fetches on its own schedule after a load.
func pages(reqs []fixture.Request) int {
	n := 0
	for _, r := range reqs {
		if r.Path != "/favicon.ico" {
			n++
		}
	}
	return n
}
