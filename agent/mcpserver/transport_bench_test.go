package mcpserver

import (
	"context"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tabwarden/tabwarden/consent"
	"github.com/tabwarden/tabwarden/consent/audit/audittest"
	"github.com/tabwarden/tabwarden/internal/stacktest"
)

// BenchmarkToolRoundTrip times one tools/call over Streamable HTTP against
// a surface that answers at once: the transport's own share of every
// call (the SDK client, loopback HTTP, the bearer check, the server).
func BenchmarkToolRoundTrip(b *testing.B) {
	eng := consent.New(consent.Config{})
	defer eng.Close()
	s, err := New(Config{Surface: newFakeSurface(), Engine: eng, Audit: &audittest.Memory{}, Version: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	url, err := s.Start(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	for _, v := range []string{statefulVersion, sessionlessVersion} {
		b.Run(v, func(b *testing.B) {
			cs, err := stacktest.Dial(url, s.DefaultToken().Secret, v, "bench")
			if err != nil {
				b.Fatal(err)
			}
			defer cs.Close()
			for b.Loop() {
				if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "browser_tabs", Arguments: map[string]any{}}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
