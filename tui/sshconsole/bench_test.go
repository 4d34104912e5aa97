package sshconsole

import (
	"fmt"
	"io"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	gossh "golang.org/x/crypto/ssh"

	"github.com/tabwarden/tabwarden/tui/sshconsole/sshtest"
)

const benchScreens = 10

// waitShown blocks until the screen shows want, checking after each write.
func waitShown(tb testing.TB, s *screen, want string) {
	deadline := time.NewTimer(waitLimit)
	defer deadline.Stop()
	for !strings.Contains(s.Text(), want) {
		select {
		case <-s.Wrote():
		case <-deadline.C:
			tb.Fatalf("screen never showed %q", want)
		}
	}
}

// BenchmarkReviewOnTenScreens: with 10 SSH screens attached, the time from
// Ask to the review being on every screen (as each terminal shows it).
// Reports p50/p95 of that latency.
func BenchmarkReviewOnTenScreens(b *testing.B) {
	keys := make([]sshtest.Key, benchScreens)
	for i := range keys {
		keys[i] = sshtest.NewKey(b, fmt.Sprintf("op%d", i))
	}
	r := newRig(b, keys...)
	screens := make([]*screen, benchScreens)
	for i, k := range keys {
		screens[i] = r.attach(k)
		waitShown(b, screens[i], "agent-one")
	}
	var lat []time.Duration
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		origin := fmt.Sprintf("https://review-%d.test", i)
		start := time.Now()
		ch := ask(r.eng, nav(origin))
		for _, s := range screens {
			waitShown(b, s, origin+" ")
		}
		lat = append(lat, time.Since(start))
		b.StopTimer()
		rev := focused(b, r.eng)
		time.Sleep(time.Until(rev.ShownAt.Add(testDelay + 10*time.Millisecond)))
		if err := r.eng.Decide(rev.ID, true); err != nil {
			b.Fatal(err)
		}
		if err := waitResult(b, ch); err != nil {
			b.Fatal(err)
		}
		for _, s := range screens {
			waitShown(b, s, "No review on screen")
		}
		b.StartTimer()
	}
	slices.Sort(lat)
	q := func(p float64) float64 { return float64(lat[int(p*float64(len(lat)-1))].Microseconds()) / 1000 }
	b.ReportMetric(q(0.50), "p50-ms")
	b.ReportMetric(q(0.95), "p95-ms")
	b.ReportMetric(0, "ns/op")
}

// BenchmarkMemoryPerScreen reports the heap one more attached SSH screen
// costs: the console's program and session plus a bare client that
// discards output (no terminal emulator), so it is an upper bound on the
// console's own share.
func BenchmarkMemoryPerScreen(b *testing.B) {
	keys := make([]sshtest.Key, benchScreens)
	for i := range keys {
		keys[i] = sshtest.NewKey(b, fmt.Sprintf("op%d", i))
	}
	r := newRig(b, keys...)
	heap := func() uint64 {
		runtime.GC()
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	var perScreen float64
	for b.Loop() {
		before := heap()
		var clients []*gossh.Client
		for _, k := range keys {
			c, err := r.dial(k)
			if err != nil {
				b.Fatal(err)
			}
			sess, err := c.NewSession()
			if err != nil {
				b.Fatal(err)
			}
			if err := sess.RequestPty("xterm-256color", termH, termW, gossh.TerminalModes{}); err != nil {
				b.Fatal(err)
			}
			out, _ := sess.StdoutPipe()
			go func() { _, _ = io.Copy(io.Discard, out) }()
			if err := sess.Shell(); err != nil {
				b.Fatal(err)
			}
			clients = append(clients, c)
		}
		deadline := time.Now().Add(waitLimit)
		for r.srv.Attached() != benchScreens {
			if time.Now().After(deadline) {
				b.Fatalf("%d screens attached", r.srv.Attached())
			}
			time.Sleep(5 * time.Millisecond)
		}
		time.Sleep(300 * time.Millisecond) // first frames rendered
		after := heap()
		perScreen = float64(after-before) / benchScreens / 1024
		for _, c := range clients {
			_ = c.Close()
		}
		for r.srv.Attached() != 0 {
			time.Sleep(5 * time.Millisecond)
		}
	}
	b.ReportMetric(perScreen, "KiB/screen")
	b.ReportMetric(0, "ns/op")
}
