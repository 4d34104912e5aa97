package dom

import "context"

// box is ref's border box for the review's mark, nil when it cannot be
// known: the mark is for the operator's eyes and never fails an action.
func (t *Tab) box(ctx context.Context, ref string) *[4]float64 {
	var b struct {
		X, Y float64
		W, H *float64
	}
	if err := t.runJSON(ctx, &b, "box", ref); err != nil || b.W == nil || b.H == nil {
		return nil
	}
	return &[4]float64{b.X, b.Y, *b.W, *b.H}
}
