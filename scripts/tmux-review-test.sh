#!/usr/bin/env bash
# tmux-review-test.sh: drive the real console in a real terminal and read the
# key-ahead guard's behaviour off the screen (docs/design.md §4).
#
#   scripts/tmux-review-test.sh BINARY [SCRIPT]
#
# Starts `BINARY --script SCRIPT --review-delay 1500ms --audit <tmp>` in a
# detached 160x48 tmux session on a private socket, waits for the
# navigation review, presses `a` at once (must be ignored: "key ignored:
# review just appeared", review still there, nothing approved), waits past
# the delay, presses `a` again (must approve: the outcome shows in the
# activity log and the audit log records it), then quits with `q` `y` and
# checks the console exits 0. Polling capture-pane is the only signal a
# terminal gives; every wait is bounded. Exits non-zero with the screen on
# failure.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
bin=$(realpath "${1:?usage: $0 BINARY [SCRIPT]}")
script=$(realpath "${2:-$repo/testdata/scripts/keyahead.jsonl}")
delay_ms=1500
review_label="Allow origin in this tab"
ignored_text="key ignored: review just appeared"
approved_text="script outcome: navigation https://a.test approved"

command -v tmux >/dev/null || { echo "FAIL: tmux is not installed" >&2; exit 2; }

work=$(mktemp -d "${TMPDIR:-/tmp}/tabwarden-tmux.XXXXXX")
sock="$work/tmux.sock"
session=review
audit_log="$work/audit.jsonl"

tm() { tmux -S "$sock" -f /dev/null "$@"; }
cleanup() {
	tm kill-server 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT

now_ms() { echo $(($(date +%s%N) / 1000000)); }
screen() { tm capture-pane -p -J -t "$session" 2>/dev/null; }

fail() {
	echo "FAIL: $*" >&2
	echo "----- screen -----" >&2
	screen >&2 || echo "(no screen: the session is gone)" >&2
	echo "----- console log -----" >&2
	cat "$work/state/tabwarden/tabwarden.log" >&2 2>/dev/null || true
	echo "----- audit log -----" >&2
	cat "$audit_log" >&2 2>/dev/null || true
	exit 1
}

# on_screen TEXT: is TEXT on the screen now? (Captured into a variable
# first: grep -q closing the pipe early would fail the pipeline.)
on_screen() {
	local s
	s=$(screen) || return 1
	[[ "$s" == *"$1"* ]]
}

# wait_for TEXT [LIMIT_MS]: poll the screen every 100ms until TEXT shows.
wait_for() {
	local deadline=$(($(now_ms) + ${2:-10000}))
	until on_screen "$1"; do
		(($(now_ms) < deadline)) || return 1
		sleep 0.1
	done
}

cmd=$(printf 'env XDG_STATE_HOME=%q XDG_DATA_HOME=%q %q --script %q --review-delay %dms --audit %q; echo $? > %q; tmux -S %q wait-for -S tabwarden-exited' \
	"$work/state" "$work/data" "$bin" "$script" "$delay_ms" "$audit_log" "$work/exit" "$sock")
# remain-on-exit keeps the session, and so the server and the wait-for
# channel, alive after the console exits.
tm new-session -d -s "$session" -x 160 -y 48 "$cmd" \; set-option -t "$session" remain-on-exit on >/dev/null

echo "step 1: wait for the navigation review"
wait_for "$review_label" 10000 || fail "the review \"$review_label\" did not appear within 10s"
shown=$(now_ms)

echo "step 2: press a at once: the key-ahead guard must ignore it"
tm send-keys -t "$session" a
wait_for "$ignored_text" $((delay_ms - 200)) || fail "no \"$ignored_text\" after an early a"
on_screen "$review_label" || fail "the review left the screen after an early a"
if on_screen "$approved_text"; then fail "an early a approved the review"; fi
if grep -q '"decision":"approved"' "$audit_log" 2>/dev/null; then fail "the audit log records an approval after an early a"; fi

echo "step 3: wait past the review delay, press a: approved"
wait_ms=$((shown + delay_ms + 300 - $(now_ms)))
((wait_ms <= 0)) || sleep "$(printf '%d.%03d' $((wait_ms / 1000)) $((wait_ms % 1000)))"
tm send-keys -t "$session" a
wait_for "$approved_text" 10000 || fail "no \"$approved_text\" in the activity log after a past the delay"
grep -q '"decision":"approved"' "$audit_log" || fail "the audit log has no approved decision"

echo "step 4: quit with q y"
tm send-keys -t "$session" q
tm send-keys -t "$session" y 2>/dev/null || true
timeout 10 tmux -S "$sock" -f /dev/null wait-for tabwarden-exited || fail "the console did not exit within 10s of q y"
code=$(cat "$work/exit" 2>/dev/null) || fail "the console's exit status was not recorded"
[[ "$code" == 0 ]] || fail "the console exited $code"

echo "PASS: early a ignored, a after ${delay_ms}ms approved, console exited 0"
