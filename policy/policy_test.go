package policy

import (
	"slices"
	"strings"
	"testing"
)

func TestMerge(t *testing.T) {
	ab := &Policy{Sources: []string{"ab"}, Origins: []string{"https://a.example", "https://b.example"}}
	bc := &Policy{Sources: []string{"bc"}, Origins: []string{"https://b.example", "https://c.example"}, ConsentFloor: ProfileTrusted}
	none := &Policy{Sources: []string{"none"}, Origins: []string{}}
	open := &Policy{Sources: []string{"open"}, BlockUploads: true, ConsentFloor: ProfileThread}
	strict := &Policy{Sources: []string{"strict"}, ConsentFloor: ProfileStrict}

	cases := []struct {
		name    string
		in      []*Policy
		origins []string // nil: unrestricted
		uploads bool
		floor   string
	}{
		{"absent alone is unrestricted", []*Policy{open}, nil, true, ProfileThread},
		{"absent ∩ X = X", []*Policy{open, ab}, []string{"https://a.example", "https://b.example"}, true, ProfileThread},
		{"X ∩ absent = X", []*Policy{ab, open}, []string{"https://a.example", "https://b.example"}, true, ProfileThread},
		{"intersection", []*Policy{ab, bc}, []string{"https://b.example"}, false, ProfileTrusted},
		{"disjoint lists allow nothing", []*Policy{ab, {Origins: []string{"https://z.example"}}}, []string{}, false, ""},
		{"[] wins over a list", []*Policy{ab, none}, []string{}, false, ""},
		{"[] wins over absent", []*Policy{open, none}, []string{}, true, ProfileThread},
		{"strictest floor wins", []*Policy{bc, open, strict}, []string{"https://b.example", "https://c.example"}, true, ProfileStrict},
		{"nil skipped", []*Policy{nil, ab, nil}, []string{"https://a.example", "https://b.example"}, false, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := Merge(c.in...)
			if (m.Origins == nil) != (c.origins == nil) || !slices.Equal(m.Origins, c.origins) {
				t.Errorf("Origins = %#v, want %#v", m.Origins, c.origins)
			}
			if m.BlockUploads != c.uploads || m.ConsentFloor != c.floor {
				t.Errorf("BlockUploads, ConsentFloor = %v, %q; want %v, %q", m.BlockUploads, m.ConsentFloor, c.uploads, c.floor)
			}
		})
	}
	if m := Merge(ab, bc); !slices.Equal(m.Sources, []string{"ab", "bc"}) {
		t.Errorf("Sources = %v", m.Sources)
	}
	if !slices.Equal(ab.Origins, []string{"https://a.example", "https://b.example"}) {
		t.Errorf("Merge mutated its input: %v", ab.Origins)
	}
	if Merge() != nil || Merge(nil) != nil {
		t.Error("Merge of no policies should be nil")
	}
}

func TestMergeFiles(t *testing.T) {
	p, err := CheckFiles([]string{testdata("valid.json"), testdata("valid.yaml"), testdata("uploads-only.yml")})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"https://a.example", "https://xn--bcher-kva.example"}
	if !slices.Equal(p.Origins, want) || !p.BlockUploads || p.ConsentFloor != ProfileThread || len(p.Sources) != 3 {
		t.Fatalf("merged = %+v", p)
	}
}

func TestDecide(t *testing.T) {
	website := Decision{Code: CodeWebsiteBlocked, Message: "This website is not approved by your organization."}
	upload := Decision{Code: CodeUploadBlocked, Message: "Browser uploads are blocked by your team's policy."}
	ok := Decision{Allow: true}

	origins := &Policy{Sources: []string{"p"}, Origins: []string{"https://a.example", "http://localhost:8080", "https://xn--bcher-kva.example"}}
	nothing := &Policy{Sources: []string{"p"}, Origins: []string{}}
	uploads := &Policy{Sources: []string{"p"}, BlockUploads: true}
	both := &Policy{Sources: []string{"p"}, Origins: []string{"https://a.example"}, BlockUploads: true}
	floorOnly := &Policy{Sources: []string{"p"}, ConsentFloor: ProfileStrict}

	type req struct {
		url, method string
		body, ws    bool
	}
	cases := []struct {
		name string
		p    *Policy
		r    req
		want Decision
	}{
		{"nil policy allows anything", nil, req{"wss://evil.example/x", "POST", true, true}, ok},
		{"floor-only policy allows requests", floorOnly, req{"https://z.example", "POST", true, false}, ok},

		{"listed origin", origins, req{"https://a.example/path?q=1#f", "GET", false, false}, ok},
		{"listed origin, explicit default port", origins, req{"https://a.example:443/", "GET", false, false}, ok},
		{"listed origin, credentials in URL", origins, req{"https://u:p@a.example/", "GET", false, false}, ok},
		{"listed origin, upper case", origins, req{"HTTPS://A.EXAMPLE/", "GET", false, false}, ok},
		{"listed IDN origin in Unicode", origins, req{"https://bücher.example/", "GET", false, false}, ok},
		{"listed origin with port", origins, req{"http://localhost:8080/api", "GET", false, false}, ok},
		{"unlisted host", origins, req{"https://b.example/", "GET", false, false}, website},
		{"subdomain is another origin", origins, req{"https://www.a.example/", "GET", false, false}, website},
		{"other scheme is another origin", origins, req{"http://a.example/", "GET", false, false}, website},
		{"other port is another origin", origins, req{"http://localhost:8081/", "GET", false, false}, website},
		{"ws maps to http origin", origins, req{"ws://localhost:8080/socket", "GET", false, true}, ok},
		{"wss maps to https origin", origins, req{"wss://a.example/socket", "GET", false, true}, ok},
		{"wss to unlisted origin", origins, req{"wss://b.example/socket", "GET", false, true}, website},
		{"ws is not https", origins, req{"ws://a.example/socket", "GET", false, true}, website},
		{"empty list blocks everything", nothing, req{"https://a.example/", "GET", false, false}, website},
		{"file URL under a list", origins, req{"file:///etc/passwd", "GET", false, false}, website},
		{"chrome URL under a list", origins, req{"chrome://settings", "GET", false, false}, website},
		{"unparseable URL under a list", origins, req{"https://a.example:99999/", "GET", false, false}, website},
		{"about:blank under a list", nothing, req{"about:blank", "GET", false, false}, ok},
		{"about:blank#frag under a list", nothing, req{"about:blank#top", "GET", false, false}, ok},
		{"about:srcdoc under a list", nothing, req{"about:srcdoc", "GET", false, false}, ok},
		{"other about: under a list", nothing, req{"about:version", "GET", false, false}, website},
		{"data: under a list", nothing, req{"data:text/html,<p>hi", "GET", false, false}, ok},
		{"blob: under a list", nothing, req{"blob:https://b.example/0b1c", "GET", false, false}, ok},
		{"unlisted POST reports website first", both, req{"https://b.example/", "POST", true, false}, website},

		{"GET", uploads, req{"https://b.example/", "GET", false, false}, ok},
		{"HEAD", uploads, req{"https://b.example/", "HEAD", false, false}, ok},
		{"OPTIONS preflight", uploads, req{"https://b.example/", "OPTIONS", false, false}, ok},
		{"lower-case get", uploads, req{"https://b.example/", "get", false, false}, ok},
		{"form POST", uploads, req{"https://b.example/form", "POST", true, false}, upload},
		{"sendBeacon-like POST", uploads, req{"https://b.example/beacon", "POST", true, false}, upload},
		{"POST without body", uploads, req{"https://b.example/ping", "POST", false, false}, upload},
		{"PUT", uploads, req{"https://b.example/x", "PUT", true, false}, upload},
		{"DELETE", uploads, req{"https://b.example/x", "DELETE", false, false}, upload},
		{"PATCH", uploads, req{"https://b.example/x", "PATCH", true, false}, upload},
		{"empty method fails closed", uploads, req{"https://b.example/", "", false, false}, upload},
		{"fetch GET with a body", uploads, req{"https://b.example/q", "GET", true, false}, upload},
		{"WebSocket handshake", uploads, req{"wss://b.example/s", "GET", false, true}, upload},
		{"ws URL without the flag", uploads, req{"ws://b.example/s", "GET", false, false}, upload},
		{"WebSocket flag on https URL", uploads, req{"https://b.example/s", "GET", false, true}, upload},
		{"allowed origin, upload blocked", both, req{"https://a.example/up", "POST", true, false}, upload},
		{"allowed origin, GET", both, req{"https://a.example/", "GET", false, false}, ok},
		{"data: with uploads blocked", uploads, req{"data:,x", "POST", true, false}, ok},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := c.p.Decide(c.r.url, c.r.method, c.r.body, c.r.ws); got != c.want {
				t.Errorf("Decide(%q, %q, body=%v, ws=%v) = %+v, want %+v", c.r.url, c.r.method, c.r.body, c.r.ws, got, c.want)
			}
		})
	}
}

func TestAllowsOrigin(t *testing.T) {
	p := &Policy{Origins: []string{"https://a.example", "http://[::1]:8080"}}
	cases := map[string]bool{
		"https://a.example":     true,
		"HTTPS://A.example:443": true,
		"http://[0::1]:8080/":   true,
		"https://b.example":     false,
		"http://a.example":      false,
		"not a url":             false,
	}
	for in, want := range cases {
		if got := p.AllowsOrigin(in); got != want {
			t.Errorf("AllowsOrigin(%q) = %v, want %v", in, got, want)
		}
	}
	var nilPolicy *Policy
	if !nilPolicy.AllowsOrigin("https://z.example") || !(&Policy{}).AllowsOrigin("https://z.example") {
		t.Error("no origin list must allow every origin")
	}
	if (&Policy{Origins: []string{}}).AllowsOrigin("https://a.example") {
		t.Error("[] must allow no origin")
	}
}

func TestSummary(t *testing.T) {
	cases := []struct {
		p    *Policy
		want string
	}{
		{nil, "no managed policy"},
		{&Policy{Sources: []string{"f"}}, "managed policy: no restrictions"},
		{&Policy{Sources: []string{"f"}, Origins: []string{"https://a.example", "https://b.example"}, BlockUploads: true}, "origins: 2 allowed · uploads blocked"},
		{&Policy{Sources: []string{"f"}, Origins: []string{}}, "origins: none allowed"},
		{&Policy{Sources: []string{"f"}, BlockUploads: true, ConsentFloor: ProfileThread}, "uploads blocked · consent ≤ thread"},
	}
	for _, c := range cases {
		if got := c.p.Summary(); got != c.want {
			t.Errorf("Summary() = %q, want %q", got, c.want)
		}
		if strings.Contains(c.p.Summary(), "\n") {
			t.Error("Summary must be one line")
		}
	}
}

func TestFormat(t *testing.T) {
	p, err := CheckFiles([]string{testdata("valid.json"), testdata("valid.yaml")})
	if err != nil {
		t.Fatal(err)
	}
	out := p.Format()
	for _, want := range []string{
		testdata("valid.json"), testdata("valid.yaml"),
		"Browser origins: 2 allowed",
		"https://a.example\n",
		"https://xn--bcher-kva.example (https://bücher.example)",
		"Browser uploads: blocked",
		"Consent profile: at most thread",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("Format() lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "c.example") || strings.Contains(out, "localhost") {
		t.Errorf("Format() lists origins outside the intersection:\n%s", out)
	}
	for _, c := range []struct {
		p    *Policy
		want string
	}{
		{nil, "No managed policy."},
		{&Policy{Sources: []string{"f"}}, "Browser origins: unrestricted"},
		{&Policy{Sources: []string{"f"}, Origins: []string{}}, "Browser origins: none allowed"},
	} {
		if got := c.p.Format(); !strings.Contains(got, c.want) {
			t.Errorf("Format() = %q, want it to contain %q", got, c.want)
		}
	}
}
