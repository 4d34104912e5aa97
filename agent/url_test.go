package agent

import (
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/tabwarden/tabwarden/consent/errcode"
	"github.com/tabwarden/tabwarden/policy"
)

func TestCheckURL(t *testing.T) {
	long := "http://127.0.0.1:8080/?q=" + strings.Repeat("a", MaxURLBytes)
	atLimit := "http://127.0.0.1/" + strings.Repeat("b", MaxURLBytes-len("http://127.0.0.1/"))
	for _, c := range []struct {
		raw string
		ok  bool
	}{
		{"http://127.0.0.1:8080/a", true},
		{"https://shop.test/", true},
		{"http://127.0.0.1:1/", true},
		{"http://127.0.0.1:65535/", true},
		{"http://[::1]:8080/", true},
		{"http://127.0.0.1:/", true}, // empty port: the scheme's default
		{atLimit, true},
		{"http://127.0.0.1:99999/", false},
		{"http://127.0.0.1:65536/", false},
		{"http://127.0.0.1:0/", false},
		{"http://127.0.0.1:00/", false},
		{"http://[::1]:0/", false},
		{"http://[::1]:70000/", false},
		{"http://127.0.0.1:-1/", false},
		{"http://127.0.0.1:8o/", false},
		{"http://:8080/", false},
		{long, false},
		{"http://127.0.0.1/" + strings.Repeat("c", 3<<20), false},
		{"", false},
		{"ftp://127.0.0.1/", false},
		{"http://user:pw@127.0.0.1/", false},
		{"http:opaque", false},
		{"/relative", false},
	} {
		_, err := checkURL(c.raw)
		if c.ok && err != nil {
			t.Errorf("checkURL(%.60q) = %v, want ok", c.raw, err)
		}
		if !c.ok && errcode.Of(err) != errcode.InvalidURL {
			t.Errorf("checkURL(%.60q) = %v, want invalid_url", c.raw, err)
		}
	}
}

// FuzzCheckURL: whatever checkURL accepts is an absolute http(s) URL with a
// host, no credentials, a port in 1–65535 (or none) and at most MaxURLBytes
// bytes; whatever it refuses is refused with invalid_url.
func FuzzCheckURL(f *testing.F) {
	for _, s := range []string{
		"http://127.0.0.1:8080/", "https://a.example/x?y#z", "http://127.0.0.1:99999/", "http://127.0.0.1:0/",
		"http://[::1]:443/", "http://user@a.example/", "javascript:alert(1)", "http://:1/", "http://a.example:/",
		"HTTP://A.EXAMPLE/", "http://a.example:0080/", "http://%31%32%37.0.0.1/", "http://a\x00b/",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		u, err := checkURL(raw)
		if err != nil {
			if errcode.Of(err) != errcode.InvalidURL {
				t.Fatalf("checkURL(%q) failed with %v, want invalid_url", raw, err)
			}
			return
		}
		if len(raw) > MaxURLBytes {
			t.Fatalf("accepted %d bytes", len(raw))
		}
		if u.Scheme != "http" && u.Scheme != "https" {
			t.Fatalf("accepted scheme %q", u.Scheme)
		}
		if u.Hostname() == "" || u.User != nil {
			t.Fatalf("accepted %q: host %q user %v", raw, u.Hostname(), u.User)
		}
		if p := u.Port(); p != "" {
			n, err := strconv.Atoi(p)
			if err != nil || n < 1 || n > 65535 {
				t.Fatalf("accepted port %q in %q", p, raw)
			}
		}
		// What is sent on is what was checked: the URL re-reads the same.
		again, err := url.Parse(u.String())
		if err != nil || again.Scheme != u.Scheme || again.Host != u.Host {
			t.Fatalf("%q re-reads as %v (%v)", raw, again, err)
		}
	})
}

// TestRefusalsBeforeAnyTabPointAtTabs: invalid_url and website_blocked are
// answered before a tab exists, so the envelope must not send the agent to
// observe a page that was never opened (issue 25).
func TestRefusalsBeforeAnyTabPointAtTabs(t *testing.T) {
	_, err := checkURL("file:///etc/passwd")
	if r := fail(err); r.Object["code"] != "invalid_url" || r.Object["next"] != "list_tabs" {
		t.Errorf("invalid_url envelope = %v, want next list_tabs", r.Object)
	}
	d := &Dispatcher{policy: &policy.Policy{Origins: []string{"http://127.0.0.1:1"}}}
	if r := fail(d.precheckPolicy("http://elsewhere.test/")); r.Object["code"] != "website_blocked" || r.Object["next"] != "list_tabs" {
		t.Errorf("website_blocked envelope = %v, want next list_tabs", r.Object)
	}
}
