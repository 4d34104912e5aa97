package browser

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/go-rod/rod"
	"github.com/go-rod/rod/lib/proto"
)

// BenchmarkFetchFloorPatterns loads the slow page (200 images, each
// answered after 20 ms) in bare Chromiums that differ only in the Fetch
// patterns they enable, nothing paused for long: none (off), documents
// only, a pattern no URL matches, and the hook's own patterns without a
// policy. It prints each median over off. It is the evidence that
// Chromium's cost of the Fetch domain does not depend on the patterns, so
// no choice of patterns brings the hook under it (docs/decisions.md).
func BenchmarkFetchFloorPatterns(b *testing.B) {
	if _, err := FindChromium(""); err != nil {
		b.Skipf("no Chromium: %v", err)
	}
	slow := newSlowSite(b, 20*time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	request := func(rt proto.NetworkResourceType) *proto.FetchRequestPattern {
		return &proto.FetchRequestPattern{URLPattern: "*", ResourceType: rt, RequestStage: proto.FetchRequestStageRequest}
	}
	variants := []struct {
		name     string
		patterns []*proto.FetchRequestPattern
	}{
		{"off", nil},
		{"documents", []*proto.FetchRequestPattern{request(proto.NetworkResourceTypeDocument)}},
		{"no-url", []*proto.FetchRequestPattern{{URLPattern: "tabwarden-matches-nothing://x/*", RequestStage: proto.FetchRequestStageRequest}}},
		{"hook", (&Browser{}).hookPatterns().Patterns},
	}
	pages := make([]*rod.Page, len(variants))
	for i, v := range variants {
		pages[i] = bareChromiumPage(b, ctx, v.name, v.patterns)
	}
	load := func(i int, run string) time.Duration {
		return timedLoad(b, ctx, pages[i], fmt.Sprintf("%s/slow.html?n=200&run=%s-%s", slow.URL, variants[i].name, run))
	}
	for i := range variants {
		load(i, "warm")
	}
	took := make([][]time.Duration, len(variants))
	for n := 0; b.Loop(); n++ {
		for k := range variants { // rotate the order so load falls on all alike
			i := (n + k) % len(variants)
			took[i] = append(took[i], load(i, fmt.Sprint(n)))
		}
	}
	b.StopTimer()
	median := func(i int) float64 { return medianMS(took[i]) }
	for i, v := range variants {
		b.ReportMetric(median(i), "ms/"+v.name)
		if i > 0 {
			b.ReportMetric(median(i)/median(0), v.name+"/off")
		}
	}
	b.ReportMetric(0, "ns/op")
}
