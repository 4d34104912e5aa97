#!/usr/bin/env bash
# Runs scripts/peers/compare.mjs: tabwarden's browser_observe next to
# Playwright MCP, Chrome DevTools MCP and agent-browser on the same pages and
# Chromium.
# Not part of CI or `make test` (it needs npm packages and minutes).
#
#   scripts/peers/run.sh [compare.mjs flags: --sizes 50,500,2000 --reps 7 --only ... --no-walk --dump DIR]
#
# Environment:
#   PEER_DEPS   a directory whose node_modules has @modelcontextprotocol/sdk,
#               @playwright/mcp, chrome-devtools-mcp and agent-browser
#               (installed there when missing). Unset: a temporary directory, removed at the end.
#   PEER_PAGES  the page generator (default /work/shared/bench/pages.mjs).
#   CHROMIUM    the one Chromium binary all three servers launch
#               (default: chromium, chromium-browser or google-chrome on PATH).
# JSON lines go to stdout, the Markdown table to stderr.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/tabwarden-peers.XXXXXX")
pid=""

cleanup() {
	# compare.mjs's children (tabwarden-bench, the peers) shut their
	# Chromium down when their stdin closes, which its exit causes.
	if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
		kill "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	fi
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

pages=${PEER_PAGES:-/work/shared/bench/pages.mjs}
[ -f "$pages" ] || { echo "run.sh: no page generator at $pages (set PEER_PAGES)" >&2; exit 2; }
chromium=${CHROMIUM:-$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)}
[ -n "$chromium" ] || { echo "run.sh: no Chromium on PATH (set CHROMIUM)" >&2; exit 2; }

deps=${PEER_DEPS:-$work/deps}
if [ ! -d "$deps/node_modules/@playwright/mcp" ] || [ ! -d "$deps/node_modules/chrome-devtools-mcp" ] || [ ! -d "$deps/node_modules/@modelcontextprotocol/sdk" ] || [ ! -d "$deps/node_modules/agent-browser" ]; then
	mkdir -p "$deps"
	[ -f "$deps/package.json" ] || (cd "$deps" && npm init -y >/dev/null)
	echo "run.sh: npm install into $deps" >&2
	# Pinned so figures from different runs compare the same peers. No
	# browser downloads: every server runs the one Chromium below.
	# agent-browser's npm package carries its native binaries; its
	# postinstall (a GitHub download when one is missing) is not needed.
	(cd "$deps" && PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 PUPPETEER_SKIP_DOWNLOAD=1 npm install --no-audit --no-fund --ignore-scripts \
		@modelcontextprotocol/sdk@1.32.2 @playwright/mcp@0.0.83 chrome-devtools-mcp@1.11.0 agent-browser@0.41.2 >&2)
fi
# npm unpacks agent-browser's native binaries without their execute bit
# (its postinstall, skipped above, would set it).
chmod +x "$deps"/node_modules/agent-browser/bin/agent-browser-* 2>/dev/null || true

(cd "$root" && go build -o "$work/tabwarden-bench" ./scripts/peers/tabwarden-bench)

node "$here/compare.mjs" --deps "$deps" --bench "$work/tabwarden-bench" --pages "$pages" --chromium "$chromium" "$@" &
pid=$!
wait "$pid"
