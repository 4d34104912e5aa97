// Package grantladder holds no shipped code: its tests drive the real tool
// surface, a real Chromium and the fixture site to measure the grant ladder
// of design.md §4 (keypresses of a 50-step task with `a` only and with `s`)
// and to witness, by the fixture server's own counters, that a scoped grant
// never covers another conversation, origin, class or window and never
// outlives a take-over, a cancel, its tab or a policy reload.
//
// scripts/grants-measure runs the measurement and prints its figures.
package grantladder
