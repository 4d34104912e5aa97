// Package logtest is the log sink tests share: a buffer that the
// browser's, the console's and a child process's goroutines may write at
// once while the test reads it. It imports nothing of tabwarden, so every
// package's own tests may use it. Only tests import it; the binary never
// links it (cmd/tabwarden's TestBinaryLinksNoTesting).
package logtest

import (
	"bytes"
	"sync"
)

// Buffer is an io.Writer safe for concurrent writers and readers. The zero
// value is empty and ready.
type Buffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String is everything written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
