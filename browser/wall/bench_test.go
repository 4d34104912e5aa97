package wall

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"
)

// BenchmarkWallPage is the wall's own share of BenchmarkHookCost's fast
// page, without Chromium: 200 small images fetched by 6 connections (as
// Chromium fetches one origin), straight from a loopback server (the floor)
// and through the wall under a policy that allows the origin, alternating
// per iteration so machine load falls on both alike. It prints the medians
// per page and their ratio, and the wall's allocations per image.
func BenchmarkWallPage(b *testing.B) {
	gif := make([]byte, 43)
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "image/gif")
		w.Header().Set("Cache-Control", "no-store")
		_, _ = w.Write(gif)
	}))
	defer site.Close()
	wl, err := Start(Options{Policy: mustPolicy(b, []string{site.URL}, false)})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = wl.Close() }()
	proxy, _ := url.Parse("http://" + wl.Addr())
	client := func(p *url.URL) *http.Client {
		t := &http.Transport{MaxConnsPerHost: 6, MaxIdleConnsPerHost: 6, DisableCompression: true}
		if p != nil {
			t.Proxy = http.ProxyURL(p)
		}
		return &http.Client{Transport: t}
	}
	direct, walled := client(nil), client(proxy)
	defer direct.CloseIdleConnections()
	defer walled.CloseIdleConnections()
	ctx := context.Background()
	page := func(c *http.Client, run int) time.Duration {
		t0 := time.Now()
		var wg sync.WaitGroup
		errs := make(chan error, 200)
		for i := range 200 {
			wg.Go(func() {
				req, _ := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("%s/pixel.gif?run=%d&i=%d", site.URL, run, i), nil)
				res, err := c.Do(req)
				if err != nil {
					errs <- err
					return
				}
				defer res.Body.Close()
				if n, _ := io.Copy(io.Discard, res.Body); res.StatusCode != http.StatusOK || n != int64(len(gif)) {
					errs <- fmt.Errorf("status %d, %d bytes", res.StatusCode, n)
				}
			})
		}
		wg.Wait()
		close(errs)
		if err := <-errs; err != nil {
			b.Fatal(err)
		}
		return time.Since(t0)
	}
	page(direct, -1)
	page(walled, -1)
	var floorT, wallT []time.Duration
	var floorCPU, wallCPU time.Duration // this process's CPU time (every goroutine: client, wall, site)
	timed := func(c *http.Client, i int, took *[]time.Duration, cpu *time.Duration) {
		c0 := processCPU(b)
		*took = append(*took, page(c, i))
		*cpu += processCPU(b) - c0
	}
	for i := 0; b.Loop(); i++ {
		if i%2 == 0 {
			timed(direct, i, &floorT, &floorCPU)
			timed(walled, i, &wallT, &wallCPU)
		} else {
			timed(walled, i, &wallT, &wallCPU)
			timed(direct, i, &floorT, &floorCPU)
		}
	}
	b.StopTimer()
	ms := func(ds []time.Duration) float64 {
		s := slices.Clone(ds)
		slices.Sort(s)
		return float64(s[len(s)/2].Microseconds()) / 1000
	}
	f, w := ms(floorT), ms(wallT)
	b.ReportMetric(f, "ms/floor")
	b.ReportMetric(w, "ms/wall")
	b.ReportMetric(w/f, "wall/floor")
	// CPU time moves far less than elapsed time with the machine's load:
	// the wall's own CPU per image is the walled page's less the direct one's.
	perImage := func(d time.Duration) float64 { return float64(d.Microseconds()) / float64(len(floorT)*200) }
	cf, cw := perImage(floorCPU), perImage(wallCPU)
	b.ReportMetric(cf, "cpu-us/image-floor")
	b.ReportMetric(cw, "cpu-us/image-wall")
	b.ReportMetric(cw-cf, "cpu-us/image-wall-own")
	b.ReportMetric(0, "ns/op")
	b.Logf("200 images over 6 connections, %d pages each: direct %.2f ms, through the wall %.2f ms (%.2f×); CPU per image %.1f µs direct, %.1f µs through the wall (the wall's own %.1f µs)",
		len(floorT), f, w, w/f, cf, cw, cw-cf)
}

// processCPU is the CPU time this process has used so far.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
