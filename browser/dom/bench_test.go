package dom

import (
	"fmt"
	"sort"
	"testing"
	"time"
)

// BenchmarkObserve measures observe on the shared bench page shape
// (/work/shared/bench/pages.mjs) for n = 50, 500, 2000. Metrics: median
// latency of a full observe, chars of its first page's text form, and chars
// of a since diff after one click. Targets (issue 3): ≤ 20/80/250 ms,
// ≤ 4k/16k/20k chars, diff ≤ 600 chars.
func BenchmarkObserve(b *testing.B) {
	bs := benchServer(b)
	for _, n := range []int{50, 500, 2000} {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			_, tab := openTab(b, fmt.Sprintf("%s/app?n=%d", bs.URL, n), Options{})
			first := observe(b, tab, ObserveRequest{}) // installs the world script
			var lat []time.Duration
			b.ResetTimer()
			for b.Loop() {
				t0 := time.Now()
				o := observe(b, tab, ObserveRequest{})
				lat = append(lat, time.Since(t0))
				first = o
			}
			b.StopTimer()
			sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "median-ms")
			b.ReportMetric(float64(len(first.TextForm)), "first-page-chars")
			b.ReportMetric(0, "ns/op")

			mustAct(b, tab, first.ID, Action{Type: "click", Ref: find(b, first, "button", "Add to cart").Ref})
			d := observe(b, tab, ObserveRequest{Since: first.ID})
			if d.Diff == nil || len(d.Diff.Changed) != 1 {
				b.Fatalf("diff after one click:\n%s", d.TextForm)
			}
			b.ReportMetric(float64(len(d.TextForm)), "since-chars")
		})
	}
}
