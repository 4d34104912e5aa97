package sshconsole

import (
	"context"
	"image"
	"strings"
	"testing"
	"time"

	"github.com/tabwarden/tabwarden/consent"
	"github.com/tabwarden/tabwarden/internal/screentest"
	"github.com/tabwarden/tabwarden/tui"
	"github.com/tabwarden/tabwarden/tui/sshconsole/sshtest"
)

// bluePage serves one picture, the fixture's blue block on white, to
// every view.
type bluePage struct{ img *image.RGBA }

func newBluePage() bluePage { return bluePage{img: screentest.BlueQuarter()} }

func (p bluePage) PageFrames(ctx context.Context, _ consent.TabID, _, _ int, deliver func(image.Image, float64, float64)) error {
	deliver(p.img, 800, 600)
	<-ctx.Done()
	return nil
}

func (bluePage) PageKey(context.Context, consent.TabID, string, string) error { return nil }

func (bluePage) PageClick(context.Context, consent.TabID, float64, float64) error { return nil }

const kittyTransmit = "a=T,f=100"

// Each SSH screen asks its own client's terminal, through its own
// session: ana's answers as kitty and gets a kitty picture; bob's never
// answers and gets half-blocks, no image escape.
func TestPageProtocolDetectedPerScreen(t *testing.T) {
	ana, bob := sshtest.NewKey(t, "ana"), sshtest.NewKey(t, "bob")
	r := newRigWith(t, func(c *Config, _ *consent.Config) { c.Page = newBluePage() }, ana, bob)
	sa, sb := r.attach(ana), r.attach(bob)
	sa.WaitRaw("the kitty query", "\x1b_Gi=31,")
	sa.WaitRaw("the DA1 query", "\x1b[c")
	sa.Send("\x1b_Gi=31;OK\x1b\\\x1b[?62;22c")
	sb.WaitRaw("the DA1 query", "\x1b[c")
	time.Sleep(2500 * time.Millisecond) // bob's screen gives up waiting (2 s)
	sa.Send("v")
	sb.Send("v")
	sa.WaitRaw("a kitty picture", kittyTransmit)
	// The picture's transmission and the frame with its placeholder
	// cells are two writes in no set order.
	sa.WaitRaw("the kitty placeholder cells", "\U0010EEEE")
	sb.WaitFor("Page view")
	outB := sb.WaitRaw("half-blocks", "▀")
	if strings.Contains(outB, kittyTransmit) || strings.Contains(outB, "\U0010EEEE") {
		t.Error("bob's screen, whose terminal never answered, got kitty output")
	}
	if strings.Contains(sa.Text(), "▀") {
		t.Error("ana's kitty screen still draws half-blocks")
	}
}

// A protocol given for every screen is used without asking.
func TestPageProtocolForcedForEveryScreen(t *testing.T) {
	ana := sshtest.NewKey(t, "ana")
	r := newRigWith(t, func(c *Config, _ *consent.Config) {
		c.Page, c.PageProtocol = newBluePage(), tui.PageSixel
	}, ana)
	s := r.attach(ana)
	s.WaitFor("agent-one")
	s.Send("v")
	out := s.WaitRaw("a sixel picture", "\x1bP0;1q")
	if strings.Contains(out, "\x1b[c") {
		t.Error("the screen asked DA1 although the protocol was given")
	}
}
