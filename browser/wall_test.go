package browser

import "testing"

// testHold is a navigation hold for a test that launches Chromium and
// opens a Browser in two steps; closing the Browser closes it too (Close
// is idempotent).
func testHold(t testing.TB) *holdServer {
	t.Helper()
	h, err := startHold()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.close)
	return h
}
