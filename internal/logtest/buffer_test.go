package logtest

import (
	"fmt"
	"strings"
	"sync"
	"testing"
)

// TestBufferKeepsEveryWrite: writers on many goroutines lose no line and
// tear none (go test -race watches the reads beside them).
func TestBufferKeepsEveryWrite(t *testing.T) {
	var b Buffer
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := range 50 {
				fmt.Fprintf(&b, "writer %d line %d\n", w, i)
				_ = b.String()
			}
		})
	}
	wg.Wait()
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	if len(lines) != 400 {
		t.Fatalf("%d lines, want 400", len(lines))
	}
	for _, l := range lines {
		if !strings.HasPrefix(l, "writer ") {
			t.Fatalf("torn line %q", l)
		}
	}
}
