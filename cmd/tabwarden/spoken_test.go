package main

import (
	"testing"
	"time"
)

// The SSH console's start line says its limits as people do ("idle 15
// min, at most 12 h"), not as Go prints durations (15m0s, 12h0m0s).
func TestSpokenDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		15 * time.Minute:          "15 min",
		12 * time.Hour:            "12 h",
		90 * time.Second:          "1m30s",
		0:                         "0s",
		2*time.Hour + time.Minute: "121 min",
	} {
		if got := spokenDuration(d); got != want {
			t.Errorf("spokenDuration(%v) = %q, want %q", d, got, want)
		}
	}
}
