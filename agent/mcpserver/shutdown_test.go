package mcpserver

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tabwarden/tabwarden/agent"
	"github.com/tabwarden/tabwarden/consent"
	"github.com/tabwarden/tabwarden/internal/stacktest"
)

// drainingSurface is the fake Surface plus agent.Dispatcher's Shutdown: it
// records that Close asked for it before the conversations ended.
type drainingSurface struct {
	*fakeSurface
	eng      *consent.Engine
	convsAt  chan int // conversations still registered when Shutdown ran
	draining chan struct{}
}

func (d *drainingSurface) Shutdown(ctx context.Context) error {
	d.convsAt <- len(d.eng.Snapshot().Conversations)
	close(d.draining)
	return nil
}

func (d *drainingSurface) Call(ctx context.Context, conv consent.ConversationID, tool string, args json.RawMessage) agent.Result {
	res := d.fakeSurface.Call(ctx, conv, tool, args)
	select {
	case <-d.draining:
		return envelope("canceled", "withdrawn by shutdown", true, "observe_before_retry")
	default:
		return res
	}
}

// Close with calls in flight on a stateful and a sessionless client: each
// gets its tool result before the server stops (the answer is written
// before its session closes), and a Surface that can drain is asked to
// first, while the conversations still exist.
func TestCloseAnswersCallsInFlight(t *testing.T) {
	for _, drain := range []bool{false, true} {
		name := "plain surface"
		if drain {
			name = "draining surface"
		}
		t.Run(name, func(t *testing.T) {
			var ds *drainingSurface
			ts := startServerWith(t, func(c *Config) {
				if drain {
					ds = &drainingSurface{fakeSurface: c.Surface.(*fakeSurface), eng: c.Engine.(*consent.Engine), convsAt: make(chan int, 1), draining: make(chan struct{})}
					c.Surface = ds
				}
			})
			ts.surface.Block("browser_act")
			type answer struct {
				res *mcp.CallToolResult
				err error
			}
			answers := make(chan answer, 2)
			for _, v := range []string{statefulVersion, sessionlessVersion} {
				cs := stacktest.Connect(t, ts.url, ts.secret, v, "busy-"+v)
				go func() {
					ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
					defer cancel()
					res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "browser_act", Arguments: map[string]any{"observationId": "obs-1"}})
					answers <- answer{res, err}
				}()
				<-ts.surface.started
			}
			ts.Close()
			for range 2 {
				a := <-answers
				if a.err != nil {
					t.Fatalf("a call in flight at Close: no tool result: %v", a.err)
				}
				if !a.res.IsError || a.res.StructuredContent.(map[string]any)["code"] != "canceled" {
					t.Fatalf("a call in flight at Close: %+v, want its canceled envelope", a.res.StructuredContent)
				}
			}
			if drain {
				if n := <-ds.convsAt; n != 2 {
					t.Fatalf("Shutdown ran with %d conversations registered, want both (before they end)", n)
				}
			}
		})
	}
}
