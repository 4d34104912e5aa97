#!/usr/bin/env bash
# install.sh — browserless 2.42.0 (pinned in package-lock.json) for the
# attach-mode tests, run on Debian's Chromium. Idempotent.
#
# npm ci --ignore-scripts: no install script runs, so neither puppeteer nor
# playwright downloads a browser. browserless finds its Chromium through
# playwright-core's registry (PLAYWRIGHT_BROWSERS_PATH/chromium-REV/...),
# so browsers/ holds a link of that name to the system Chromium; routes/
# holds only browserless's Chromium and management routes (the Chrome,
# Edge, Firefox and WebKit ones refuse to load without those browsers).
# The Go tests (browser/fleettest) start it with ROUTES and
# PLAYWRIGHT_BROWSERS_PATH pointing here.
set -euo pipefail
cd "$(dirname "$0")"
dir=$PWD

chromium=${TABWARDEN_CHROMIUM:-}
if [[ -z "$chromium" ]]; then
	for c in chromium chromium-browser google-chrome; do
		if chromium=$(command -v "$c"); then break; fi
	done
fi
[[ -x "$chromium" ]] || { echo "browserless install: no Chromium found" >&2; exit 1; }

if [[ ! -f node_modules/@browserless.io/browserless/package.json ||
	! node_modules/.package-lock.json -nt package-lock.json ]]; then
	PUPPETEER_SKIP_DOWNLOAD=1 PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 \
		npm ci --ignore-scripts --no-audit --no-fund --loglevel=error
fi

build=$dir/node_modules/@browserless.io/browserless/build
mkdir -p routes
ln -sfn "$build/routes/chromium" routes/chromium
ln -sfn "$build/routes/management" routes/management

rev=$(node -p 'require("./node_modules/playwright-core/browsers.json").browsers.find(b => b.name === "chromium").revision')
mkdir -p "browsers/chromium-$rev/chrome-linux64"
ln -sfn "$chromium" "browsers/chromium-$rev/chrome-linux64/chrome"
echo "browserless $(node -p 'require("./node_modules/@browserless.io/browserless/package.json").version') installed in $dir (Chromium: $chromium)"
