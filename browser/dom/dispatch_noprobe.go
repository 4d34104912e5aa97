//go:build !tabwarden_probe

package dom

// probeInput is a no-op outside a tabwarden_probe build: the shipped binary
// carries no benchmark probe (dispatch_probe.go has the real one).
func probeInput(string) {}
