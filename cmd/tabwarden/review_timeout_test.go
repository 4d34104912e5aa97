package main

import "testing"

// --review-timeout is bounded (docs/decisions.md): 10 s to 30 min. Values
// outside are usage errors naming the flag and its bounds, for every
// command.
func TestReviewTimeoutBounds(t *testing.T) {
	for _, v := range []string{"9s", "0", "-1m", "30m1s", "2h"} {
		r := run(t, nil, "--review-timeout", v, "version")
		r.wantCode(t, 2)
		contains(t, "stderr "+v, r.stderr, "--review-timeout", "10s", "30m")
	}
	run(t, nil, "--review-timeout", "soon").wantCode(t, 2)
	for _, v := range []string{"10s", "60s", "5m", "30m"} {
		run(t, nil, "--review-timeout", v, "version").wantCode(t, 0)
		run(t, nil, "demo", "--review-timeout", v, "--help").wantCode(t, 0)
	}
	r := run(t, nil, "--help")
	r.wantCode(t, 0)
	contains(t, "help", r.stdout, "--review-timeout", "1m0s")
}
