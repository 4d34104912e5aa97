package browser

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestHardeningGaps(t *testing.T) {
	full := append([]string{"/usr/lib/chromium/chromium", "--enable-automation"}, LaunchFlags()...)
	if got := hardeningGaps(full, nil); !slices.Equal(got, []string{preloadingGap}) {
		t.Fatalf("the launch flags leave gaps: %q", got)
	}
	// Chromium keeps the last of a repeated switch: a later
	// --disable-features without BackForwardCache undoes ours.
	later := append(slices.Clone(full), "--disable-features=Translate")
	got := hardeningGaps(later, nil)
	if len(got) != 2 || !strings.Contains(got[0], "back/forward cache") {
		t.Fatalf("a later --disable-features: %q", got)
	}
	bare := []string{"chromium", "--remote-debugging-port=9222"}
	if got := hardeningGaps(bare, nil); len(got) != 5 {
		t.Fatalf("a bare Chromium: %d gaps %q, want 5", len(got), got)
	}
	got = hardeningGaps(nil, errors.New("not allowed"))
	if len(got) != 2 || !strings.Contains(got[0], "cannot be read") {
		t.Fatalf("unreadable: %q", got)
	}
}
