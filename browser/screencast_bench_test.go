package browser

import (
	"context"
	"image"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tabwarden/tabwarden/agent/demo/fixture/fixturetest"
)

// BenchmarkPageFramesRate is the frames per second PageFrames delivers
// from a page that repaints on every frame (the budget's cap is 10/s),
// decoded, over 5 s per op.
func BenchmarkPageFramesRate(b *testing.B) {
	fixturetest.NeedChromium(b)
	g := newFakeGate()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	br, err := Launch(ctx, Options{Headless: true, ProfileDir: filepath.Join(b.TempDir(), "p"), Gate: g})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = br.Close() }()
	site := fixturetest.Start(b)
	tab, err := br.NewTab(ctx, conv, false)
	if err != nil {
		b.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- br.Navigate(ctx, conv, tab, site.URL+"/pageview-anim.html") }()
	p := <-g.asks
	p.reply <- nil
	if err := <-done; err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	var total atomic.Int64
	var secs float64
	for range b.N {
		sctx, stop := context.WithTimeout(ctx, 5*time.Second)
		start := time.Now()
		_ = br.PageFrames(sctx, tab, 480, 360, func(image.Image, float64, float64) { total.Add(1) })
		secs += time.Since(start).Seconds()
		stop()
	}
	b.ReportMetric(float64(total.Load())/secs, "frames/s")
}
