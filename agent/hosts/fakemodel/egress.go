package fakemodel

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"
)

// Egress is a loopback HTTP proxy that refuses everything and remembers
// where each request wanted to go. Hosts run with HTTP_PROXY, HTTPS_PROXY
// and ALL_PROXY pointing at it (NO_PROXY naming loopback), so any attempt of
// theirs to reach the network shows here instead of leaving the machine.
type Egress struct {
	// URL is http://127.0.0.1:PORT.
	URL string
	srv *http.Server

	mu      sync.Mutex
	targets []string
}

// StartEgress serves the refusing proxy on a fresh loopback port.
func StartEgress() (*Egress, error) {
	ln, err := new(net.ListenConfig).Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("fakemodel: egress listen: %w", err)
	}
	e := &Egress{URL: "http://" + ln.Addr().String()}
	e.srv = &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		target := r.Host
		if r.Method != http.MethodConnect {
			target = r.URL.String()
		}
		e.mu.Lock()
		e.targets = append(e.targets, r.Method+" "+target)
		e.mu.Unlock()
		http.Error(w, "tabwarden test: the network is off limits", http.StatusForbidden)
	})}
	go func() { _ = e.srv.Serve(ln) }()
	return e, nil
}

// Env returns the proxy variables (both spellings) that send a process's
// traffic here, loopback excepted.
func (e *Egress) Env() []string {
	var env []string
	for _, k := range []string{"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"} {
		env = append(env, k+"="+e.URL, strings.ToLower(k)+"="+e.URL)
	}
	return append(env, "NO_PROXY=127.0.0.1,localhost,::1", "no_proxy=127.0.0.1,localhost,::1")
}

// Targets returns "METHOD TARGET" of every request the proxy refused.
func (e *Egress) Targets() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.targets)
}

// Close stops the proxy.
func (e *Egress) Close() { _ = e.srv.Close() }
