package browser

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/go-rod/rod/lib/proto"
)

// countingSite is a fixture origin on 127.0.0.1 that serves fixed pages
// and counts every request by path.
type countingSite struct {
	*httptest.Server
	mu   sync.Mutex
	hits map[string]int
}

func startCountingSite(t *testing.T, pages func(path string) string) *countingSite {
	t.Helper()
	s := &countingSite{hits: map[string]int{}}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.hits[r.URL.Path]++
		s.mu.Unlock()
		w.Header().Set("Cache-Control", "no-store")
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, pages(r.URL.Path))
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *countingSite) count(path string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hits[path]
}

func (s *countingSite) total() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, c := range s.hits {
		n += c
	}
	return n
}

// A frame of another site runs in a process of its own, and the frames
// its document makes are reported only on that process's session: the
// Browser follows it, so they are the tab's too — one of a granted origin
// loads, one of an origin the tab has no grant for does not — and
// placeFrame finds them in its frame tree when no event placed them.
func TestFramesOfAnOutOfProcessFrameArePlaced(t *testing.T) {
	witness := startCountingSite(t, func(string) string { return "<p>witness" })
	var top *countingSite
	other := startCountingSite(t, func(string) string {
		return `<!doctype html><iframe src="` + top.URL + `/inner.html"></iframe><iframe src="` + witness.URL + `/f.html"></iframe>`
	})
	// localhost is another site than 127.0.0.1.
	otherSite := "http://localhost:" + strings.TrimPrefix(other.URL, "http://127.0.0.1:")
	top = startCountingSite(t, func(path string) string {
		if path == "/inner.html" {
			return "<p>inner"
		}
		return `<!doctype html><iframe src="` + otherSite + `/frame.html"></iframe>`
	})

	eng, br, tab := engineTab(t)
	navigateApproved(t, eng, br, tab, otherSite+"/first.html", otherSite)
	navigateApproved(t, eng, br, tab, top.URL+"/", top.URL)
	if other.count("/frame.html") != 1 || top.count("/inner.html") != 1 {
		t.Fatalf("granted frames: frame.html %d, inner.html %d requests, want 1 each", other.count("/frame.html"), top.count("/inner.html"))
	}
	if n := witness.total(); n != 0 {
		t.Fatalf("%d requests reached an origin the tab has no grant for, from a frame nested in a cross-site frame", n)
	}

	br.reg.mu.Lock()
	target := br.reg.byID[tab].target
	var sids []proto.TargetSessionID
	for sid, tabTarget := range br.reg.oopifs {
		if tabTarget == target {
			sids = append(sids, sid)
		}
	}
	br.reg.mu.Unlock()
	// The cross-site frame, and inner.html inside it (127.0.0.1 again:
	// another site than its parent's).
	if len(sids) != 2 {
		t.Fatalf("%d out-of-process frames followed, want 2", len(sids))
	}
	ctx := testCtx(t)
	var res *proto.PageGetFrameTreeResult
	for _, sid := range sids {
		r, err := proto.PageGetFrameTree{}.Call(client{b: br, sid: sid, ctx: ctx})
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasSuffix(r.FrameTree.Frame.URL, "/frame.html") {
			res = r
		}
	}
	if res == nil {
		t.Fatalf("no followed session shows frame.html")
	}
	// The frame refused its document stays in frame.html's process (an
	// error page); inner.html is in a process of its own.
	var nested proto.PageFrameID
	for _, c := range res.FrameTree.ChildFrames {
		if strings.HasPrefix(c.Frame.UnreachableURL, witness.URL) {
			nested = c.Frame.ID
		}
	}
	if nested == "" {
		t.Fatalf("frame.html has no frame for the refused document")
	}
	br.reg.mu.Lock()
	placed := br.reg.frames[nested]
	delete(br.reg.frames, nested)
	br.reg.mu.Unlock()
	if placed != target {
		t.Fatalf("the nested frame was placed in %q, want the tab %q", placed, target)
	}
	if got := br.placeFrame(nested); len(got) != 1 || got[0].target != target {
		t.Fatalf("placeFrame of the nested frame: %v, want the tab", got)
	}
	if got := br.placeFrame("no-such-frame"); len(got) != 0 {
		t.Fatalf("placeFrame of a frame in no task tab: %d tabs, want none", len(got))
	}
	br.reg.mu.Lock()
	br.reg.unfollowed[target] = true
	br.reg.mu.Unlock()
	if got := br.placeFrame("no-such-frame"); len(got) != 1 || got[0].target != target {
		t.Fatalf("placeFrame with a frame of the tab not followed: %v, want the tab (it may be its)", got)
	}
}
