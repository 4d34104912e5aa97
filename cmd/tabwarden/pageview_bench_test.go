package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// procUsage is a process's CPU time (user+system) and resident memory.
func procUsage(b *testing.B, pid int) (cpu time.Duration, rssKB int) {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		b.Fatal(err)
	}
	// Fields after the command name, which is in parentheses.
	f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+2:]))
	ut, _ := strconv.Atoi(f[11])
	st, _ := strconv.Atoi(f[12])
	cpu = time.Duration(ut+st) * 10 * time.Millisecond // USER_HZ 100
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Fatal(err)
	}
	for _, l := range strings.Split(string(status), "\n") {
		if strings.HasPrefix(l, "VmRSS:") {
			rssKB, _ = strconv.Atoi(strings.Fields(l)[1])
		}
	}
	return cpu, rssKB
}

// BenchmarkPageViewConsole measures the real console (not its Chromium)
// in a 120×40 tmux terminal with the page view open on a page that
// repaints on every frame: its CPU share and resident memory over a soak
// of TABWARDEN_PAGEVIEW_SOAK (default 60s; the issue asks for 5m), against
// the same time with the view closed. (BenchmarkPageFramesRate in browser
// measures how many frames a second that page gets through the budget.)
func BenchmarkPageViewConsole(b *testing.B) {
	soak := 60 * time.Second
	if d, err := time.ParseDuration(os.Getenv("TABWARDEN_PAGEVIEW_SOAK")); err == nil {
		soak = d
	}
	c, _, ep := startPageConsole(b, pageConsole{name: fmt.Sprintf("twpagebench%d", os.Getpid()), cols: 120, rows: 40, agent: "page-bench"})
	ctx, cancel := context.WithTimeout(context.Background(), 2*soak+2*time.Minute)
	defer cancel()
	c.openApproved(ctx, c.site.URL+"/pageview-anim.html")

	b.ResetTimer()
	for range b.N {
		cpu0, rss0 := procUsage(b, ep.PID)
		time.Sleep(soak)
		cpu1, rss1 := procUsage(b, ep.PID)
		c.keys("v")
		c.waitFor("the picture", 20*time.Second, func(_, e string) bool {
			n, _, _ := blockCells(parseCells(e), 0, 160, 255)
			return n > 0
		})
		cpu2, rss2 := procUsage(b, ep.PID)
		// Resident memory through the open soak: its peak, and whether it
		// still grows in the second half (a leak per frame would).
		peak, mid := rss2, 0
		for t0 := time.Now(); time.Since(t0) < soak; {
			time.Sleep(min(soak/20, soak-time.Since(t0)))
			_, rss := procUsage(b, ep.PID)
			peak = max(peak, rss)
			if mid == 0 && time.Since(t0) >= soak/2 {
				mid = rss
			}
		}
		cpu3, rss3 := procUsage(b, ep.PID)
		c.keys("v")
		b.ReportMetric(float64(peak)/1024, "rss-MB-open-peak")
		b.ReportMetric(float64(rss3-mid)/1024, "rss-MB-open-2nd-half-growth")
		b.ReportMetric(100*float64(cpu1-cpu0)/float64(soak), "cpu%-hidden")
		b.ReportMetric(100*float64(cpu3-cpu2)/float64(soak), "cpu%-open")
		b.ReportMetric(float64(rss0)/1024, "rss-MB-start")
		b.ReportMetric(float64(rss1)/1024, "rss-MB-hidden")
		b.ReportMetric(float64(rss3)/1024, "rss-MB-open")
	}
}
