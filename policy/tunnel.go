package policy

import (
	"net"
	"strconv"
)

// Tunnel kinds: what the first bytes of a proxy tunnel (HTTP CONNECT)
// showed the connection to be.
const (
	// TunnelUnknown: nothing seen yet; only the target is judged.
	TunnelUnknown = iota
	// TunnelTLS: a TLS handshake, so an https: or wss: origin whose
	// requests the proxy cannot read.
	TunnelTLS
	// TunnelPlain: anything else. Chromium tunnels plain bytes only for a
	// ws: WebSocket or a WebRTC TURN-over-TCP relay; both carry data the
	// page chose upstream.
	TunnelPlain
)

// DecideTunnel judges a connection to hostport ("host:port", IPv6 hosts in
// brackets) that a proxy is asked to open without seeing the requests it
// will carry (HTTP CONNECT), at two moments: with kind TunnelUnknown when it
// is asked (refused: no connection is made), and again with the kind its
// first client bytes showed.
//
// The target must be the host and port of an allowed origin (either
// scheme); a TLS tunnel must match an allowed https origin, a plain one an
// allowed http origin. With blockBrowserUploads a plain tunnel is refused
// whatever its target: it is a WebSocket or a relay, both uploads. A TLS
// tunnel's requests are not seen, so their methods and bodies are not
// judged here (the browser's request hook sees them).
func (p *Policy) DecideTunnel(hostport string, kind int) Decision {
	if p == nil {
		return allow
	}
	if _, port, err := net.SplitHostPort(hostport); err != nil || !validPort(port) {
		return Decision{Code: CodeWebsiteBlocked, Message: MsgWebsiteBlocked}
	}
	https := p.AllowsOrigin("https://" + hostport)
	http := p.AllowsOrigin("http://" + hostport)
	if p.Origins != nil {
		if _, err := NormalizeOrigin("http://" + hostport); err != nil {
			return Decision{Code: CodeWebsiteBlocked, Message: MsgWebsiteBlocked}
		}
		ok := https || http
		switch kind {
		case TunnelTLS:
			ok = https
		case TunnelPlain:
			ok = http
		}
		if !ok {
			return Decision{Code: CodeWebsiteBlocked, Message: MsgWebsiteBlocked}
		}
	}
	if p.BlockUploads && (kind == TunnelPlain || (p.Origins != nil && !https)) {
		return Decision{Code: CodeUploadBlocked, Message: MsgUploadBlocked}
	}
	return allow
}

func validPort(s string) bool {
	n, err := strconv.Atoi(s)
	return err == nil && n >= 1 && n <= 65535 && strconv.Itoa(n) == s
}
