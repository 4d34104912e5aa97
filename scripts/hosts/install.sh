#!/usr/bin/env bash
# install.sh: install the four pinned MCP agent hosts (Claude Code, Codex,
# Gemini CLI, opencode; package.json and package-lock.json beside this
# script) into a cache directory, and print the directory that holds their
# programs (claude, codex, gemini, opencode) on the last line.
#
#   scripts/hosts/install.sh [CACHE_DIR]
#
# CACHE_DIR defaults to $TABWARDEN_HOSTS_CACHE, else
# ${XDG_CACHE_HOME:-~/.cache}/tabwarden/hosts. Each lock gets its own
# directory (named by the lock's hash), so a changed pin installs afresh and
# an unchanged one is reused; CACHE_DIR/current points at the last one.
#
# Only the npm registry is reached: `npm ci --ignore-scripts` runs no
# package's install script, and no browser is downloaded. Claude Code's
# own postinstall (node install.cjs: it copies the platform's native binary
# over its placeholder, offline) is then run by hand. opencode comes as its
# x64 Linux package (the binary opencode-ai's postinstall would pick): the
# opencode-ai wrapper names platform packages the registry does not have,
# which `npm ci` refuses.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
cache=${1:-${TABWARDEN_HOSTS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/tabwarden/hosts}}
sum=$(cat "$here/package.json" "$here/package-lock.json" | sha256sum | cut -c1-16)
dir=$cache/$sum

if [[ ! -f $dir/.installed ]]; then
	command -v npm >/dev/null || { echo "hosts: npm is not installed (scripts/deps.sh installs it)" >&2; exit 1; }
	if [[ $(uname -sm) != "Linux x86_64" ]]; then
		echo "hosts: the pinned hosts are installed for x86_64 Linux only (opencode's package); this is $(uname -sm)" >&2
		exit 1
	fi
	tmp=$dir.tmp.$$
	rm -rf "$tmp"
	mkdir -p "$tmp"
	cp "$here/package.json" "$here/package-lock.json" "$tmp/"
	echo "hosts: npm ci into $dir" >&2
	(
		cd "$tmp"
		export PUPPETEER_SKIP_DOWNLOAD=1 PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm_config_update_notifier=false
		npm ci --ignore-scripts --no-audit --no-fund --loglevel=error >&2
		node node_modules/@anthropic-ai/claude-code/install.cjs >&2
		mkdir bin
		ln -s ../node_modules/.bin/claude ../node_modules/.bin/codex ../node_modules/.bin/gemini bin/
		ln -s ../node_modules/opencode-linux-x64/bin/opencode bin/opencode
		for p in claude codex gemini opencode; do
			echo "hosts: $p $(bin/$p --version 2>/dev/null | head -1)" >&2
		done
		touch .installed
	)
	rm -rf "$dir"
	mv "$tmp" "$dir"
fi
ln -sfn "$sum" "$cache/current"
echo "$cache/current/bin"
