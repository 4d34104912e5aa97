#!/usr/bin/env bash
# tmux-ssh-test.sh: two operators answer one console over OpenSSH's ssh
# client, each in a real terminal (docs/design.md §11).
#
#   scripts/tmux-ssh-test.sh BINARY [SCRIPT]
#
# Starts `BINARY --script SCRIPT --ssh-listen 127.0.0.1:PORT
# --ssh-authorized-keys KEYS` in a detached tmux session, then `ssh -t` in
# two more sessions as ana and bob (their own keys, made with ssh-keygen).
# Both see the review; ana presses d past the review delay; every screen
# (the console's own and both SSH ones) shows "denied by ana"; bob's a
# afterwards finds no review; the audit log names ana and her key's
# fingerprint. A third key not in the file is refused. Then both operators
# leave with q and the console quits with q y and exits 0. Exits non-zero
# with the screens on failure.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
bin=$(realpath "${1:?usage: $0 BINARY [SCRIPT]}")
script=$(realpath "${2:-$repo/testdata/scripts/keyahead.jsonl}")
delay_ms=1500
review_label="Allow origin in this tab"

for c in tmux ssh ssh-keygen python3; do
	command -v "$c" >/dev/null || { echo "FAIL: $c is not installed" >&2; exit 2; }
done

work=$(mktemp -d "${TMPDIR:-/tmp}/tabwarden-ssh.XXXXXX")
sock="$work/tmux.sock"
audit_log="$work/audit.jsonl"
tm() { tmux -S "$sock" -f /dev/null "$@"; }
cleanup() {
	tm kill-server 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT

now_ms() { echo $(($(date +%s%N) / 1000000)); }
screen() { tm capture-pane -p -J -t "$1" 2>/dev/null; }
fail() {
	echo "FAIL: $*" >&2
	for s in console ana bob; do
		echo "----- $s -----" >&2
		screen "$s" >&2 || echo "(gone)" >&2
	done
	echo "----- audit log -----" >&2
	cat "$audit_log" >&2 2>/dev/null || true
	exit 1
}
on_screen() {
	local s
	s=$(screen "$1") || return 1
	[[ "$s" == *"$2"* ]]
}
wait_for() {
	local deadline=$(($(now_ms) + ${3:-10000}))
	until on_screen "$1" "$2"; do
		(($(now_ms) < deadline)) || return 1
		sleep 0.1
	done
}

for who in ana bob eve; do
	ssh-keygen -q -t ed25519 -N '' -C "$who" -f "$work/$who" >/dev/null
done
cat "$work/ana.pub" "$work/bob.pub" >"$work/operators"
ana_fp=$(ssh-keygen -l -E sha256 -f "$work/ana.pub" | awk '{print $2}')
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')

cmd=$(printf 'env XDG_STATE_HOME=%q XDG_DATA_HOME=%q %q --script %q --review-delay %dms --audit %q --ssh-listen 127.0.0.1:%d --ssh-authorized-keys %q; echo $? > %q; tmux -S %q wait-for -S tabwarden-exited' \
	"$work/state" "$work/data" "$bin" "$script" "$delay_ms" "$audit_log" "$port" "$work/operators" "$work/exit" "$sock")
tm new-session -d -s console -x 160 -y 48 "$cmd" \; set-option -t console remain-on-exit on >/dev/null
wait_for console "SSH console on 127.0.0.1:$port" 10000 || fail "the console did not start its SSH endpoint"

sshcmd() {
	printf 'ssh -t -p %d -i %q -o IdentitiesOnly=yes -o UserKnownHostsFile=%q -o StrictHostKeyChecking=accept-new -o BatchMode=yes -F /dev/null whoever@127.0.0.1' \
		"$port" "$work/$1" "$work/known_hosts"
}

echo "step 1: a key not in the file is refused"
if $(sshcmd eve) true </dev/null >"$work/eve.out" 2>&1; then fail "eve's key signed in"; fi
grep -q "Permission denied" "$work/eve.out" || fail "eve: $(cat "$work/eve.out")"

echo "step 2: ana and bob connect and see the review"
tm new-session -d -s ana -x 160 -y 48 "$(sshcmd ana)" \; set-option -t ana remain-on-exit on >/dev/null
tm new-session -d -s bob -x 160 -y 48 "$(sshcmd bob)" \; set-option -t bob remain-on-exit on >/dev/null
for s in console ana bob; do
	wait_for "$s" "$review_label" 15000 || fail "$s never showed the review"
done
shown=$(now_ms)

echo "step 3: past the delay, ana denies; every screen says so"
wait_ms=$((shown + delay_ms + 500 - $(now_ms)))
((wait_ms <= 0)) || sleep "$(printf '%d.%03d' $((wait_ms / 1000)) $((wait_ms % 1000)))"
tm send-keys -t ana d
for s in console ana bob; do
	wait_for "$s" "denied by ana" 10000 || fail "$s never showed \"denied by ana\""
done

echo "step 4: bob's a afterwards approves nothing"
tm send-keys -t bob a
wait_for bob "no review on screen" 5000 || fail "bob's a did not report that no review is on screen"
if grep -q '"decision":"approved"' "$audit_log"; then fail "the audit log records an approval"; fi
grep '"kind":"decision"' "$audit_log" | grep -q "\"operator\":\"ana\",\"keyFingerprint\":\"$ana_fp\"" ||
	fail "the decision does not name ana and $ana_fp"

echo "step 5: operators leave with q; the console quits with q y"
tm send-keys -t ana q
tm send-keys -t bob q
tm send-keys -t console q
sleep 0.3
tm send-keys -t console y 2>/dev/null || true
timeout 10 tmux -S "$sock" -f /dev/null wait-for tabwarden-exited || fail "the console did not exit within 10s of q y"
code=$(cat "$work/exit" 2>/dev/null) || fail "the console's exit status was not recorded"
[[ "$code" == 0 ]] || fail "the console exited $code"

echo "PASS: two SSH operators, first decision (ana's d) won and shown everywhere, audit names $ana_fp"
