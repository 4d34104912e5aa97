package dom

import (
	"bytes"
	"context"
	"fmt"
	"image/png"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/go-rod/rod"
	"github.com/go-rod/rod/lib/launcher"
	"github.com/go-rod/rod/lib/proto"
)

func TestScratch(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, `<!doctype html><html><body style="margin:0;background:#fff"><div style="height:3000px">hi</div><iframe src="/f"></iframe></body></html>`)
	}))
	defer srv.Close()
	l := launcher.New().Bin("/usr/bin/chromium").Set("headless", "new").NoSandbox(true).Set("no-first-run").Set("disable-sync")
	u := l.MustLaunch()
	b := rod.New().ControlURL(u).MustConnect()
	defer b.MustClose()
	p := b.MustPage(srv.URL)
	p.MustWaitLoad()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	pc := p.Context(ctx)
	tree, err := proto.PageGetFrameTree{}.Call(pc)
	if err != nil { t.Fatal(err) }
	fid := tree.FrameTree.Frame.ID
	w1, err := proto.PageCreateIsolatedWorld{FrameID: fid, WorldName: "tw"}.Call(pc)
	if err != nil { t.Fatal(err) }
	r, err := proto.RuntimeEvaluate{Expression: "globalThis.x = 42; 1", ContextID: w1.ExecutionContextID, ReturnByValue: true}.Call(pc)
	t.Log(r, err)
	w2, err := proto.PageCreateIsolatedWorld{FrameID: fid, WorldName: "tw"}.Call(pc)
	t.Log("ids", w1.ExecutionContextID, w2.ExecutionContextID)
	r, err = proto.RuntimeEvaluate{Expression: "String(globalThis.x) + ' ' + String(document.querySelector('iframe').contentDocument) + ' ' + String(document.querySelector('iframe').contentWindow.x)", ContextID: w2.ExecutionContextID, ReturnByValue: true}.Call(pc)
	t.Log(r.Result.Value, err)
	// overlay
	t0 := time.Now()
	err = proto.DOMEnable{}.Call(pc); t.Log("dom enable", err)
	err = proto.OverlayEnable{}.Call(pc); t.Log("overlay enable", err, time.Since(t0))
	err = proto.OverlayHighlightRect{X: 100, Y: 100, Width: 20, Height: 20, Color: &proto.DOMRGBA{R: 255, G: 0, B: 0}}.Call(pc)
	t.Log("hl", err)
	proto.RuntimeEvaluate{Expression: "scrollTo(0, 500)", ContextID: w2.ExecutionContextID}.Call(pc)
	m, _ := proto.PageGetLayoutMetrics{}.Call(pc)
	t.Logf("vv %+v", m.CSSVisualViewport)
	shot, err := proto.PageCaptureScreenshot{Format: proto.PageCaptureScreenshotFormatPng, Clip: &proto.PageViewport{X: m.CSSVisualViewport.PageX, Y: m.CSSVisualViewport.PageY, Width: m.CSSVisualViewport.ClientWidth, Height: m.CSSVisualViewport.ClientHeight, Scale: 1}}.Call(pc)
	if err != nil { t.Fatal(err) }
	img, _ := png.Decode(bytes.NewReader(shot.Data))
	t.Log(img.Bounds(), img.At(110, 110), img.At(50, 50))
	shot2, _ := proto.PageCaptureScreenshot{Format: proto.PageCaptureScreenshotFormatPng}.Call(pc)
	img2, _ := png.Decode(bytes.NewReader(shot2.Data))
	t.Log(img2.Bounds(), img2.At(110, 110), img2.At(50, 50))
	proto.OverlayHideHighlight{}.Call(pc)
	shot3, _ := proto.PageCaptureScreenshot{Format: proto.PageCaptureScreenshotFormatPng}.Call(pc)
	img3, _ := png.Decode(bytes.NewReader(shot3.Data))
	t.Log(img3.At(110, 110))
	p.MustNavigate(srv.URL + "/x").MustWaitLoad()
	r, err = proto.RuntimeEvaluate{Expression: "1", ContextID: w2.ExecutionContextID, ReturnByValue: true}.Call(pc)
	t.Log("after nav", r, err)
}
