package policy

import (
	"errors"
	"testing"
)

func TestNormalizeOrigin(t *testing.T) {
	valid := []struct{ in, want string }{
		{"https://a.example", "https://a.example"},
		{"https://a.example/", "https://a.example"},
		{"HTTPS://A.Example", "https://a.example"},
		{"  https://a.example  ", "https://a.example"},
		{"https://a.example:443", "https://a.example"},
		{"http://a.example:80/", "http://a.example"},
		{"http://a.example:443", "http://a.example:443"},
		{"https://a.example:80", "https://a.example:80"},
		{"https://a.example:08443", "https://a.example:8443"},
		{"https://a.example:", "https://a.example"},
		{"https://bücher.example", "https://xn--bcher-kva.example"},
		{"https://BÜCHER.example", "https://xn--bcher-kva.example"},
		{"https://xn--bcher-kva.example", "https://xn--bcher-kva.example"},
		{"http://[::1]", "http://[::1]"},
		{"http://[0:0:0:0:0:0:0:1]:8080", "http://[::1]:8080"},
		{"http://[2001:DB8::A]", "http://[2001:db8::a]"},
		{"http://127.0.0.1:3000", "http://127.0.0.1:3000"},
		{"http://localhost", "http://localhost"},
		{"https://r3---sn-x.example", "https://r3---sn-x.example"},
		{"https://_dmarc.example", "https://_dmarc.example"},
		{"https://a.example.", "https://a.example."},
	}
	for _, c := range valid {
		got, err := NormalizeOrigin(c.in)
		if err != nil || got != c.want {
			t.Errorf("NormalizeOrigin(%q) = %q, %v; want %q", c.in, got, err, c.want)
		}
	}

	invalid := map[string]string{
		"path":              "https://a.example/x",
		"path only slashes": "https://a.example//",
		"credentials":       "https://user:pw@a.example",
		"user only":         "https://user@a.example",
		"empty userinfo":    "https://@a.example",
		"query":             "https://a.example?x=1",
		"empty query":       "https://a.example/?",
		"hash":              "https://a.example#top",
		"empty hash":        "https://a.example/#",
		"ftp scheme":        "ftp://a.example",
		"ws scheme":         "wss://a.example",
		"file scheme":       "file:///etc/passwd",
		"javascript":        "javascript:alert(1)",
		"no scheme":         "a.example",
		"scheme relative":   "//a.example",
		"opaque":            "https:a.example",
		"empty host":        "https://",
		"empty host slash":  "https:///",
		"port zero":         "https://a.example:0",
		"port too big":      "https://a.example:65536",
		"port not number":   "https://a.example:x",
		"ipv6 zone":         "http://[fe80::1%25eth0]",
		"short ipv4":        "http://127.1",
		"hex ipv4":          "http://0x7f.0.0.1",
		"empty label":       "https://a..example",
		"space in host":     "https://a b.example",
		"backslash":         `https://a.example\x`,
		"empty":             "",
		"invalid utf8":      "http://\xef00",
	}
	for name, in := range invalid {
		if got, err := NormalizeOrigin(in); !errors.Is(err, ErrInvalidOrigin) {
			t.Errorf("%s: NormalizeOrigin(%q) = %q, %v; want ErrInvalidOrigin", name, in, got, err)
		}
	}
}

func TestDisplayOrigin(t *testing.T) {
	if got := displayOrigin("https://xn--bcher-kva.example:8443"); got != "https://bücher.example:8443" {
		t.Errorf("displayOrigin = %q", got)
	}
	if got := displayOrigin("https://a.example"); got != "" {
		t.Errorf("displayOrigin of ASCII origin = %q, want empty", got)
	}
}

func FuzzNormalizeOrigin(f *testing.F) {
	for _, s := range []string{
		"https://a.example", "HTTP://A.EXAMPLE:80/", "https://bücher.example",
		"http://[::1]:8080", "https://u@a.example", "https://a.example/?#",
		"http://127.0.0.1", "https://ａ.example", "https://a.example:0443",
		"https://%C3%BC.example", "http://[::ffff:1.2.3.4]",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := NormalizeOrigin(s)
		if err != nil {
			return
		}
		n2, err := NormalizeOrigin(n)
		if err != nil || n2 != n {
			t.Fatalf("not idempotent: %q -> %q -> %q, %v", s, n, n2, err)
		}
		// A request to the normalized origin must compare equal to it, or an
		// allowed site would be blocked.
		if r, ok := requestOrigin(n + "/p?q#f"); !ok || r != n {
			t.Fatalf("request origin of %q = %q, %v", n, r, ok)
		}
	})
}
