package tui

import (
	"strings"
	"testing"

	"github.com/tabwarden/tabwarden/consent"
)

// BenchmarkLargeDisclosureFrame measures one tick's work (Update + View)
// with a maximal 256 KiB result on screen.
func BenchmarkLargeDisclosureFrame(b *testing.B) {
	s := panelCases()["disclosure"]
	f := *s.Focused
	d := *f.Disclosure
	d.Result = `{"text":"` + strings.Repeat("lorem ipsum dolor sit amet ", 256*1024/27) + `"}`
	d.Size = len(d.Result)
	f.Disclosure = &d
	s.Focused, s.Queue = &f, []consent.Review{f}
	m, _ := newTestModel(s, 160, 48)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		m = step(m, tickMsg(fixedNow))
		_ = m.View()
	}
}
