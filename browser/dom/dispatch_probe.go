//go:build tabwarden_probe

package dom

import "sync/atomic"

// inputProbe is the process-wide observation point for the instant input
// is sent to Chromium; see SetInputProbe.
var inputProbe atomic.Pointer[func(tabID string)]

// SetInputProbe makes every dispatch call f with the tab's id just before
// its first input event (Input.dispatchMouseEvent, dispatchKeyEvent,
// insertText, the select script, the file chooser) is sent to Chromium, and
// returns a func that restores the previous probe. It exists for the gate
// latency benchmark, which times key → dispatch from outside the package.
// f runs on the dispatching goroutine and must return at once; it must not
// call back into the Tab. The default (nil) costs one atomic load per
// dispatch and changes nothing.
func SetInputProbe(f func(tabID string)) (restore func()) {
	var p *func(string)
	if f != nil {
		p = &f
	}
	prev := inputProbe.Swap(p)
	return func() { inputProbe.Store(prev) }
}

func probeInput(tabID string) {
	if f := inputProbe.Load(); f != nil {
		(*f)(tabID)
	}
}
