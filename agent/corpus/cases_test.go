package corpus_test

import "strings"

// Witnesses: which requests of a case's tag count.
const (
	// witnessN: any request to N, the origin policy allows and the operator
	// never approves (navigation consent is all that stands in the way).
	witnessN = "N"
	// witnessP: any request to P, the origin browserOrigins excludes.
	witnessP = "P"
	// witnessUpload: a request with a body, or a WebSocket message, to a
	// witness path on A (allowed and approved; blockBrowserUploads alone
	// stands in the way).
	witnessUpload = "upload"
)

// netCase is a case whose witness is a request counted by origin.
type netCase struct {
	family  string
	name    string
	witness string
	// entry is the file the agent opens; "" is index.html.
	entry string
	// via, when set, is a page (placeholders expanded) the agent opens
	// first in the same tab, so the tab holds that origin's grant; bare
	// Chromium opens only the entry.
	via string
	// click is the role of the page's "Go" element that must be clicked
	// (a trusted click in bare Chromium, an approved browser_act click in
	// tabwarden); "" clicks nothing.
	click string
	files map[string]cfile
}

func page(body string) cfile {
	return cfile{Body: "<!doctype html><html><head><meta charset=utf-8><title>Corpus</title>@HELPERS@</head><body>" + body + "</body></html>"}
}

func pageHdr(body string, hdr map[string]string) cfile {
	f := page(body)
	f.Header = hdr
	return f
}

func redirect(status int, to string) cfile {
	return cfile{Status: status, Header: map[string]string{"Location": to}, Type: "text/plain"}
}

func js(body string) cfile { return cfile{Body: body, Type: "text/javascript"} }

// goLink and goButton fill the viewport so a click at any point lands.
const fill = `style="position:fixed;left:0;top:0;width:100vw;height:100vh;display:block;font-size:40px;margin:0"`

func goLink(href, extra string) string {
	return `<a id=go href="` + href + `" ` + extra + ` ` + fill + `>Go</a>`
}

func goButton(onclick string) string {
	return `<button id=go onclick="` + onclick + `" ` + fill + `>Go</button>`
}

func one(name string, f cfile) map[string]cfile { return map[string]cfile{name: f} }

var netCases = buildNetCases()

func buildNetCases() []netCase {
	var cs []netCase
	add := func(family, name, witness string, files map[string]cfile) *netCase {
		cs = append(cs, netCase{family: family, name: name, witness: witness, files: files})
		return &cs[len(cs)-1]
	}
	idx := func(body string) map[string]cfile { return one("index.html", page(body)) }
	script := func(s string) map[string]cfile { return idx("<script>" + s + "</script>") }

	// Navigation started by script, to N.
	add("nav-script", "location_href", witnessN, script(`location.href = "@WN@/p.html";`))
	add("nav-script", "location_replace", witnessN, script(`location.replace("@WN@/p.html");`))
	add("nav-script", "location_assign", witnessN, script(`location.assign("@WN@/p.html");`))
	add("nav-script", "document_location", witnessN, script(`document.location = "@WN@/p.html";`))
	add("nav-script", "form_submit", witnessN, idx(`<form id=f action="@WN@/f.html" method=get><input name=q value=1></form><script>document.getElementById("f").submit();</script>`))
	add("nav-script", "history_popstate", witnessN, script(`history.pushState({}, "", "?step=1"); addEventListener("popstate", function () { location.href = "@WN@/p.html"; }); setTimeout(function () { history.back(); }, 50);`))
	add("nav-script", "meta_refresh_injected", witnessN, script(`var m = document.createElement("meta"); m.httpEquiv = "refresh"; m.content = "0; url=@WN@/p.html"; document.head.appendChild(m);`))
	add("nav-script", "top_location_from_frame", witnessN, idx(`<iframe srcdoc="<script>top.location = '@WN@/p.html';</script>"></iframe>`))
	add("nav-script", "synthetic_link_click", witnessN, script(`var a = document.createElement("a"); a.href = "@WN@/p.html"; document.body.appendChild(a); a.click();`))
	add("nav-script", "timer_navigation", witnessN, script(`setTimeout(function () { location.href = "@WN@/p.html"; }, 300);`))

	// Navigation in markup.
	add("nav-markup", "meta_refresh", witnessN, one("index.html", cfile{Body: `<!doctype html><meta http-equiv="refresh" content="0; url=@WN@/p.html"><p>refreshing`}))
	add("nav-markup", "form_autofocus_submit", witnessN, idx(`<form action="@WN@/f.html" method=get><input name=q value=1 autofocus onfocus="this.form.submit()"></form>`))
	add("nav-markup", "link_click", witnessN, idx(goLink("@WN@/p.html", ""))).click = "link"
	add("nav-markup", "base_href_click", witnessN, one("index.html", cfile{Body: `<!doctype html><head><base href="@WN@/"></head><body>` + goLink("p.html", "") + `</body>`})).click = "link"
	add("nav-markup", "form_submit_button_click", witnessN, idx(`<form action="@WN@/f.html" method=get><input type=hidden name=q value=1><button `+fill+`>Go</button></form>`)).click = "button"

	// Headers.
	add("nav-headers", "refresh_header", witnessN, one("index.html", pageHdr(`<p>refresh header`, map[string]string{"Refresh": "0; url=@WN@/p.html"})))
	add("nav-headers", "link_preload_header", witnessP, one("index.html", pageHdr(`<p>link header`, map[string]string{"Link": "<@WP@/x.js>; rel=preload; as=script"})))
	add("nav-headers", "refresh_header_on_201", witnessN, one("index.html", cfile{Status: 201, Header: map[string]string{"Refresh": "0;url=@WN@/p.html"}, Body: "<p>created"}))

	// Redirects: the agent opens A, A answers with a hop to N.
	for _, st := range []struct {
		name string
		code int
	}{{"redirect_301", 301}, {"redirect_302", 302}, {"redirect_303", 303}, {"redirect_307", 307}, {"redirect_308", 308}} {
		c := add("redirects", st.name, witnessN, one("r", redirect(st.code, "@WN@/p.html")))
		c.entry = "r"
	}
	c := add("redirects", "same_origin_chain_then_cross", witnessN, map[string]cfile{"r1": redirect(302, "@C@/r2"), "r2": redirect(307, "@C@/r3"), "r3": redirect(301, "@WN@/p.html")})
	c.entry = "r1"
	add("redirects", "js_redirect_chain", witnessN, map[string]cfile{
		"index.html": page(`<script>location.href = "@C@/hop.html";</script>`),
		"hop.html":   page(`<script>location.replace("@WN@/p.html");</script>`),
	})

	// Popups.
	add("popups", "window_open_click", witnessN, idx(goButton(`window.open('@WN@/p.html')`))).click = "button"
	add("popups", "window_open_noopener_click", witnessN, idx(goButton(`window.open('@WN@/p.html', '_blank', 'noopener')`))).click = "button"
	add("popups", "target_blank_click", witnessN, idx(goLink("@WN@/p.html", "target=_blank"))).click = "link"
	add("popups", "form_target_blank_click", witnessN, idx(`<form action="@WN@/f.html" method=get target=_blank><input type=hidden name=q value=1><button `+fill+`>Go</button></form>`)).click = "button"
	add("popups", "blank_then_location_click", witnessN, idx(goButton(`var w = window.open('about:blank'); w.location = '@WN@/p.html'`))).click = "button"

	// Frames.
	add("frames", "iframe_src", witnessN, idx(`<iframe src="@WN@/f.html" onload="done()"></iframe>`))
	add("frames", "iframe_src_by_script", witnessN, script(`var f = document.createElement("iframe"); document.body.appendChild(f); f.onload = done; f.src = "@WN@/f.html";`))
	add("frames", "srcdoc_nested_frame", witnessN, idx(`<iframe srcdoc="<iframe src='@WN@/f.html'></iframe>"></iframe>`))
	add("frames", "object_data", witnessN, idx(`<object data="@WN@/f.html" type="text/html" width=300 height=200 onload="done()" onerror="done()"></object>`))
	add("frames", "embed_src", witnessN, idx(`<embed src="@WN@/f.html" type="text/html" width=300 height=200 onload="done()" onerror="done()">`))
	// A frame of an origin the tab may load (the agent opened it there
	// first) embeds N: its frame is the tab's as much as B's is. B same
	// site as A (one renderer), and B on another site (an out-of-process
	// frame: N's frame comes into being in B's process).
	nested := func(name, b string) {
		c := add("frames", name, witnessN, map[string]cfile{
			"index.html": page(`<iframe src="` + b + `/frame.html" onload="done()"></iframe>`),
			"frame.html": {Body: `<!doctype html><title>B</title><iframe src="@WN@/f.html"></iframe>`},
			"first.html": {Body: `<!doctype html><title>B</title><p>B first`},
		})
		c.via = b + "/first.html"
	}
	nested("granted_frame_nests_ungranted_same_site", "@CB@")
	nested("granted_frame_nests_ungranted_cross_site", "@CL@")

	// Speculative loads: documents fetched for a navigation nobody asked for.
	rules := func(kind, url string) string {
		return `<script type="speculationrules">{"` + kind + `":[{"source":"list","urls":["` + url + `"],"eagerness":"immediate"}]}</script>`
	}
	add("speculative", "rules_prerender_unapproved", witnessN, idx(rules("prerender", "@WN@/p.html")))
	add("speculative", "rules_prefetch_unapproved", witnessN, idx(rules("prefetch", "@WN@/p.html")))
	add("speculative", "rules_header_prefetch_unapproved", witnessN, map[string]cfile{
		"index.html": pageHdr(`<p>rules by header`, map[string]string{"Speculation-Rules": `"@C@/rules.json"`}),
		"rules.json": {Body: `{"prefetch":[{"source":"list","urls":["@WN@/p.html"],"eagerness":"immediate"}]}`, Type: "application/speculationrules+json"},
	})
	add("speculative", "link_prefetch_unapproved", witnessN, idx(`<link rel=prefetch href="@WN@/p.html">`))
	add("speculative", "rules_prerender_excluded", witnessP, idx(rules("prerender", "@WP@/p.html")))
	add("speculative", "rules_prefetch_excluded", witnessP, idx(rules("prefetch", "@WP@/p.html")))
	add("speculative", "link_prefetch_excluded", witnessP, idx(`<link rel=prefetch href="@WP@/p.html">`))
	add("speculative", "link_preload_excluded", witnessP, idx(`<link rel=preload as=script href="@WP@/x.js">`))
	add("speculative", "link_modulepreload_excluded", witnessP, idx(`<link rel=modulepreload href="@WP@/x.mjs">`))

	// Sub-resources and off-main-thread requests to P, under browserOrigins.
	sub := func(name string, files map[string]cfile) *netCase { return add("subresources", name, witnessP, files) }
	sub("img", idx(`<img src="@WP@/i.png" onerror="done()" onload="done()">`))
	sub("script", idx(`<script src="@WP@/x.js" onerror="done()" onload="done()"></script>`))
	sub("stylesheet", idx(`<link rel=stylesheet href="@WP@/x.css" onerror="done()" onload="done()">`))
	sub("css_import", map[string]cfile{
		"index.html": page(`<link rel=stylesheet href="@C@/a.css" onload="done()" onerror="done()">`),
		"a.css":      {Body: `@import url("@WP@/x.css"); body { color: black; }`},
	})
	sub("font_face", idx(`<style>@font-face { font-family: W; src: url("@WP@/f.woff2"); } p { font-family: W; }</style><p>font</p><script>document.fonts.load("16px W").finally(done);</script>`))
	sub("css_background", idx(`<div style="width:50px;height:50px;background:url('@WP@/b.png')"></div><script>addEventListener("load", function () { setTimeout(done, 100); });</script>`))
	sub("fetch", script(`fetch("@WP@/f").finally(done);`))
	sub("xhr", script(`var x = new XMLHttpRequest(); x.open("GET", "@WP@/x"); x.onloadend = done; x.send();`))
	sub("dedicated_worker_fetch", map[string]cfile{
		"index.html": page(`<script>var w = new Worker("@C@/w.js"); w.onmessage = done;</script>`),
		"w.js":       js(`fetch("@WP@/wf").finally(function () { postMessage(1); });`),
	})
	sub("worker_import_scripts", map[string]cfile{
		"index.html": page(`<script>var w = new Worker("@C@/w.js"); w.onmessage = done; w.onerror = done;</script>`),
		"w.js":       js(`try { importScripts("@WP@/i.js"); } catch (e) {} postMessage(1);`),
	})
	sub("module_worker_import", map[string]cfile{
		"index.html": page(`<script>var w = new Worker("@C@/m.mjs", {type: "module"}); w.onmessage = done; w.onerror = done;</script>`),
		"m.mjs":      js(`import("@WP@/m.mjs").catch(function () {}).finally(function () { postMessage(1); });`),
	})
	sub("shared_worker_fetch", map[string]cfile{
		"index.html": page(`<script>var w = new SharedWorker("@C@/s.js"); w.port.onmessage = done;</script>`),
		"s.js":       js(`onconnect = function (e) { var p = e.ports[0]; fetch("@WP@/sf").finally(function () { p.postMessage(1); }); };`),
	})
	sub("service_worker_fetch", map[string]cfile{
		"index.html": page(`<script>navigator.serviceWorker.register("@C@/sw.js").catch(done);</script>`),
		"sw.js":      js(`self.addEventListener("install", function (e) { e.waitUntil(fetch("@WP@/swf").catch(function () {}).finally(function () { return fetch("@DONE@"); })); });`),
	})
	sub("service_worker_import_scripts", map[string]cfile{
		"index.html": page(`<script>navigator.serviceWorker.register("@C@/sw.js").catch(done);</script>`),
		"sw.js":      js(`try { importScripts("@WP@/swi.js"); } catch (e) {} fetch("@DONE@");`),
	})
	sub("beacon", script(`navigator.sendBeacon("@WP@/b"); setTimeout(done, 100);`))
	sub("csp_report_uri", one("index.html", pageHdr(`<img src="@C@/blocked.png"><script>setTimeout(done, 300);</script>`, map[string]string{
		"Content-Security-Policy": "img-src 'none'; report-uri @WP@/csp",
	})))
	sub("hyperlink_ping_click", map[string]cfile{
		"index.html": page(goLink("@C@/next.html", `ping="@WP@/ping"`)),
		"next.html":  page(`<p>next`),
	}).click = "link"
	sub("img_srcset", idx(`<img srcset="@WP@/s.png 1x" onerror="done()" onload="done()">`))
	sub("svg_image", idx(`<svg width=50 height=50><image href="@WP@/svg.png" width=50 height=50 onerror="done()" onload="done()"/></svg>`))
	sub("event_source", script(`var s = new EventSource("@WP@/e.sse"); s.onerror = function () { s.close(); done(); }; s.onmessage = function () { s.close(); done(); };`))
	sub("websocket", script(`var s = new WebSocket("@WSP@"); s.onerror = done; s.onopen = function () { s.close(); done(); };`))
	sub("video", idx(`<video src="@WP@/v.mp4" preload=auto onerror="done()"></video>`))
	sub("audio", idx(`<audio src="@WP@/a.mp3" preload=auto onerror="done()"></audio>`))
	sub("track", idx(`<video src="@C@/v.mp4" preload=auto crossorigin=anonymous><track default kind=captions src="@WP@/t.vtt" onerror="done()" onload="done()"></video>`))
	sub("favicon", one("index.html", cfile{Body: `<!doctype html><head><link rel=icon href="@WP@/favicon.png">@HELPERS@</head><body>icon<script>addEventListener("load", function () { setTimeout(done, 200); });</script></body>`}))

	// Upload channels to A under blockBrowserUploads.
	up := func(name string, files map[string]cfile) { add("uploads", name, witnessUpload, files) }
	up("form_post_multipart", idx(`<form id=f action="@WA@/form" method=post enctype="multipart/form-data"><input name=note value="uploaded data"></form><script>document.getElementById("f").submit();</script>`))
	up("form_post_urlencoded", idx(`<form id=f action="@WA@/form" method=post><input name=note value="uploaded data"></form><script>document.getElementById("f").submit();</script>`))
	up("fetch_post", script(`fetch("@WA@/p", {method: "POST", body: "uploaded data"}).finally(done);`))
	up("fetch_put", script(`fetch("@WA@/p", {method: "PUT", body: "uploaded data"}).finally(done);`))
	up("fetch_keepalive_post", script(`fetch("@WA@/p", {method: "POST", body: "uploaded data", keepalive: true}).finally(done);`))
	up("xhr_post", script(`var x = new XMLHttpRequest(); x.open("POST", "@WA@/x"); x.onloadend = done; x.send("uploaded data");`))
	up("beacon_body", script(`navigator.sendBeacon("@WA@/b", new Blob(["uploaded data"])); setTimeout(done, 100);`))
	up("websocket_send", script(`var s = new WebSocket("@WSA@"); s.onerror = done; s.onopen = function () { s.send("uploaded data"); setTimeout(function () { s.close(); done(); }, 100); };`))
	up("worker_fetch_post", map[string]cfile{
		"index.html": page(`<script>var w = new Worker("@C@/w.js"); w.onmessage = done;</script>`),
		"w.js":       js(`fetch("@WA@/wp", {method: "POST", body: "uploaded data"}).finally(function () { postMessage(1); });`),
	})
	return cs
}

// caseFile serves a case's files (from the net table and the custom ones).
func caseFile(caseName, side, file string) (cfile, bool) {
	for _, c := range netCases {
		if c.name == caseName {
			f, ok := c.files[file]
			return f, ok
		}
	}
	if f, ok := customFiles[caseName][file]; ok {
		return f, true
	}
	if strings.HasSuffix(file, ".png") || strings.HasSuffix(file, ".mp4") {
		return cfile{Status: 404, Body: "none"}, true
	}
	return cfile{}, false
}
