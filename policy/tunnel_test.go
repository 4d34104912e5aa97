package policy

import "testing"

func TestDecideTunnel(t *testing.T) {
	both := &Policy{Origins: []string{"https://a.example", "http://127.0.0.1:8080"}}
	up := &Policy{Origins: both.Origins, BlockUploads: true}
	open := &Policy{BlockUploads: true}
	cases := []struct {
		name     string
		p        *Policy
		hostport string
		kind     int
		want     string // "" allowed, else the code
	}{
		{"no policy", nil, "b.example:443", TunnelPlain, ""},
		{"allowed https target", both, "a.example:443", TunnelUnknown, ""},
		{"allowed https target, TLS", both, "a.example:443", TunnelTLS, ""},
		{"https origin does not allow plain bytes", both, "a.example:443", TunnelPlain, CodeWebsiteBlocked},
		{"other port of an allowed host", both, "a.example:8443", TunnelUnknown, CodeWebsiteBlocked},
		{"unlisted host", both, "b.example:443", TunnelUnknown, CodeWebsiteBlocked},
		{"http origin's host:port", both, "127.0.0.1:8080", TunnelUnknown, ""},
		{"http origin: plain (ws:)", both, "127.0.0.1:8080", TunnelPlain, ""},
		{"http origin: TLS is another origin", both, "127.0.0.1:8080", TunnelTLS, CodeWebsiteBlocked},
		{"uploads blocked: http-only target is a WebSocket", up, "127.0.0.1:8080", TunnelUnknown, CodeUploadBlocked},
		{"uploads blocked: TLS to allowed https", up, "a.example:443", TunnelTLS, ""},
		{"uploads blocked: plain to https target", up, "a.example:443", TunnelPlain, CodeWebsiteBlocked},
		{"uploads blocked, no list: TLS", open, "b.example:443", TunnelTLS, ""},
		{"uploads blocked, no list: plain", open, "b.example:443", TunnelPlain, CodeUploadBlocked},
		{"garbage target", both, "a.example:443/x", TunnelUnknown, CodeWebsiteBlocked},
		{"no port", both, "a.example", TunnelUnknown, CodeWebsiteBlocked},
		{"empty list", &Policy{Origins: []string{}}, "a.example:443", TunnelUnknown, CodeWebsiteBlocked},
		{"ipv6", &Policy{Origins: []string{"http://[::1]:9"}}, "[::1]:9", TunnelPlain, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := c.p.DecideTunnel(c.hostport, c.kind)
			if d.Allow != (c.want == "") || d.Code != c.want {
				t.Errorf("DecideTunnel(%q, %d) = %+v, want code %q", c.hostport, c.kind, d, c.want)
			}
		})
	}
}
