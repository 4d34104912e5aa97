package browser

import (
	"log/slog"
	"strings"

	"github.com/tabwarden/tabwarden/browser/wall"
	"github.com/tabwarden/tabwarden/policy"
)

// What the console enforces below the page, in words for the operator: the
// activity log on attach, the header and `tabwarden doctor` say the same.
const (
	// WallLaunched: a Chromium the console launched.
	WallLaunched = "on: every connection of the launched Chromium goes through tabwarden's policy proxy (loopback included; WebRTC only through it, no UDP)"
	// WallAttached: a browser the console attached to (--browser-url).
	WallAttached = "off: an attached browser connects on its own, so managed policy holds only for what the request hook sees " +
		"(its tabs' requests; navigation consent as usual) — not for what the browser process fetches (Background Fetch, " +
		"payment manifests, FedCM), documents and workers a service worker makes up, or WebRTC (UDP, TURN)"
	// WallAttachedShort is the header's word for it.
	WallAttachedShort = "no network wall"
)

// startWall starts the second wall (package wall) for one launched
// Chromium: managed policy on every connection it opens, whoever opens it.
// The navigation hold is the one loopback server of ours it lets through
// unjudged: the hook rewrites a held main-frame request to it.
func startWall(p *policy.Policy, log *slog.Logger, hold *holdServer) (*wall.Wall, error) {
	w, err := wall.Start(wall.Options{Policy: p, Own: []string{hold.addr()}, Logger: log})
	if err != nil {
		return nil, unavailable("start the network wall: %v", err)
	}
	return w, nil
}

// networkFlags are the switches by which an ExtraFlags entry could take
// Chromium past the wall: another proxy, none, a PAC script, WebRTC or
// QUIC back on UDP.
var networkFlags = []string{
	"--proxy-server", "--no-proxy-server", "--proxy-pac-url", "--proxy-auto-detect", "--proxy-bypass-list",
	"--winhttp-proxy-resolver", "--force-webrtc-ip-handling-policy", "--webrtc-ip-handling-policy",
	"--enable-quic", "--origin-to-force-quic-on",
}

// withoutNetworkFlags drops from extra every flag of networkFlags, saying
// so in the log: the wall's own come after and Chromium takes the last
// occurrence, but a different switch (a PAC script) would win over them.
func withoutNetworkFlags(extra []string, log *slog.Logger) []string {
	out := extra[:0:0]
	for _, f := range extra {
		name, _, _ := strings.Cut(f, "=")
		drop := false
		for _, n := range networkFlags {
			if strings.EqualFold(name, n) {
				drop = true
				break
			}
		}
		if drop {
			if log != nil {
				log.Warn("launch flag dropped: the network wall decides where Chromium connects", "flag", name)
			}
			continue
		}
		out = append(out, f)
	}
	return out
}
