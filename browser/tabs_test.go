package browser

import (
	"context"
	"strings"
	"syscall"
	"testing"

	"github.com/go-rod/rod/lib/proto"

	"github.com/tabwarden/tabwarden/agent/demo/fixture/fixturetest"
	"github.com/tabwarden/tabwarden/consent"
	"github.com/tabwarden/tabwarden/consent/errcode"
)

func TestTabLimitAndClosedTabs(t *testing.T) {
	e := launch(t, func(o *Options) { o.TabLimit = 2 })
	t1, t2 := e.newTab(t), e.newTab(t)
	if t1 == t2 || strings.Contains(string(t1), "-") && len(t1) > 30 {
		t.Fatalf("tab ids %q %q", t1, t2)
	}
	_, err := e.b.NewTab(testCtx(t), conv, true)
	wantCode(t, err, errcode.TabLimit)
	// The limit is per conversation.
	if _, err := e.b.NewTab(testCtx(t), "c2", true); err != nil {
		t.Fatalf("other conversation: %v", err)
	}

	if err := e.b.CloseTab(testCtx(t), conv, t1); err != nil {
		t.Fatal(err)
	}
	e.gate.until(t, "RemoveTab of the closed tab", func(g *fakeGate) bool { return g.removed[t1] })
	wantCode(t, e.b.Navigate(testCtx(t), conv, t1, "http://127.0.0.1:1/"), errcode.TabClosed)
	// Closing freed a slot; the closed id is never handed out again.
	t3 := e.newTab(t)
	if t3 == t1 {
		t.Fatal("a closed tab id was reused")
	}
	wantCode(t, e.b.Navigate(testCtx(t), "c2", t2, "http://127.0.0.1:1/"), errcode.WrongConversation)
	_, err = e.b.NewTab(testCtx(t), "", false)
	wantCode(t, err, errcode.MissingSession)
}

func TestOperatorTabsAreNotTheAgents(t *testing.T) {
	a := fixturetest.Start(t)
	e := launch(t, nil)
	// A tab opened outside the console (here: straight through CDP, as the
	// operator's ctrl+T would) is an operator tab; its navigation is
	// policy's business only, never a review.
	ctx := testCtx(t)
	res, err := proto.TargetCreateTarget{URL: a.URL + "/session"}.Call(e.b.rod().Context(ctx))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.WaitPath(ctx, "/session"); err != nil {
		t.Fatal(err)
	}
	var op consent.TabInfo
	e.gate.until(t, "operator tab reported", func(g *fakeGate) bool {
		for _, ti := range g.tabs {
			if strings.HasPrefix(ti.URL, a.URL) {
				op = ti
				return true
			}
		}
		return false
	})
	if op.Conversation != "" {
		t.Fatalf("hand-opened tab owned by %q", op.Conversation)
	}
	e.gate.noAsk(t)
	wantCode(t, e.b.Navigate(ctx, conv, op.ID, a.URL+"/"), errcode.WrongConversation)
	_ = res
}

func TestNonHTTPPopupIsClosed(t *testing.T) {
	a := fixturetest.Start(t)
	e := launch(t, nil)
	tab := e.newTab(t)
	e.open(t, tab, a.URL, a.URL+"/popup-blob.html")
	e.click(t, tab, 50, 50)
	e.gate.until(t, "popup closed and reported", func(g *fakeGate) bool {
		for _, n := range g.notes {
			if strings.Contains(n, "non-HTTP(S)") {
				return true
			}
		}
		return false
	})
	e.gate.until(t, "popup gone", func(g *fakeGate) bool {
		for _, ti := range g.tabs {
			if ti.OpenerTabID == tab {
				return false
			}
		}
		return true
	})
}

func TestSelectBringsTabToFront(t *testing.T) {
	e := launch(t, nil)
	t1 := e.newTab(t)
	t2 := e.newTab(t)
	_ = t2
	e.gate.emit(consent.Event{Kind: consent.EventSelect, Conversation: conv, Tab: t1})
	// Headless Chromium has no window focus to observe; the worker's call
	// must at least not wedge anything: the next op still works.
	if _, err := e.b.NewTab(testCtx(t), conv, true); err != nil {
		t.Fatal(err)
	}
}

func TestCrashMakesOpsUnavailable(t *testing.T) {
	e := launch(t, nil)
	e.newTab(t)
	if err := syscall.Kill(-e.b.PID(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	select {
	case <-e.b.Done():
	case <-testCtx(t).Done():
		t.Fatal("Done never closed after Chromium died")
	}
	_, err := e.b.NewTab(context.Background(), conv, false)
	wantCode(t, err, errcode.BrowserUnavailable)
	if err := e.b.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestPageIsBoundToTheTab(t *testing.T) {
	a := fixturetest.Start(t)
	e := launch(t, nil)
	tab := e.newTab(t)
	e.open(t, tab, a.URL, a.URL+"/session")
	p, err := e.b.Page(testCtx(t), conv, tab)
	if err != nil {
		t.Fatal(err)
	}
	tree, err := proto.PageGetFrameTree{}.Call(p.Context(testCtx(t)))
	if err != nil {
		t.Fatal(err)
	}
	if tree.FrameTree.Frame.URL != a.URL+"/session" || string(tree.FrameTree.Frame.ID) != string(p.TargetID) {
		t.Fatalf("page bound to frame %s at %s", tree.FrameTree.Frame.ID, tree.FrameTree.Frame.URL)
	}
	if _, err := e.b.Page(testCtx(t), "c2", tab); errcode.Of(err) != errcode.WrongConversation {
		t.Fatalf("another conversation got the page: %v", err)
	}
}
