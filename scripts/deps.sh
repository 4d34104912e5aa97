#!/usr/bin/env bash
# deps.sh: make sure the system programs tabwarden's tests and demo use are
# installed: Chromium (the browser agents drive), Xvfb and xauth (headed
# Chromium without a local display, or over ssh -X) and tmux (the terminal
# end-to-end test), plus Node.js and npm for the agent/mcpserver test that
# runs the official TypeScript MCP client. On Debian/Ubuntu it installs what is missing with
# apt-get (sudo when not root); elsewhere it prints exactly what to install
# and carries on, so `make test` still runs what it can.
set -euo pipefail

have() { command -v "$1" >/dev/null 2>&1; }

os_id=""
if [[ -r /etc/os-release ]]; then
	os_id=$(. /etc/os-release && echo "${ID:-}")
fi

# Ubuntu ships Chromium as chromium-browser (a snap wrapper); Debian as chromium.
chromium_pkg=chromium
[[ "$os_id" == ubuntu ]] && chromium_pkg=chromium-browser

missing=()
have chromium || have chromium-browser || have google-chrome || have google-chrome-stable || missing+=("$chromium_pkg")
have Xvfb || have xvfb-run || missing+=(xvfb)
have xauth || missing+=(xauth)
have tmux || missing+=(tmux)
# xterm (a VT340 with sixel) is the real terminal of the page view's test.
have xterm || missing+=(xterm)
# xprop reads xterm's title and urgency hint in the bell test (x11-utils).
have xprop || missing+=(x11-utils)
have node || missing+=(nodejs)
have npm || missing+=(npm)
# The SSH console's end-to-end script drives real OpenSSH clients.
{ have ssh && have ssh-keygen; } || missing+=(openssh-client)

if [[ ${#missing[@]} -eq 0 ]]; then
	echo "deps: chromium, xvfb, xauth, tmux, xterm, xprop, node, npm and openssh-client are installed"
	exit 0
fi

if [[ -r /etc/debian_version ]] && have apt-get; then
	sudo=()
	if [[ $(id -u) -ne 0 ]]; then
		if ! have sudo; then
			echo "deps: missing ${missing[*]}; as root run: apt-get update && apt-get install -y ${missing[*]}" >&2
			exit 1
		fi
		sudo=(sudo)
	fi
	echo "deps: installing ${missing[*]}"
	"${sudo[@]}" apt-get update -qq
	DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
	exit 0
fi

# Not Debian: say exactly what to install, in this platform's package names.
echo "deps: missing ${missing[*]}; install them with:" >&2
case "$(uname -s)" in
Darwin)
	# macOS needs no X server: Chromium opens on the window server.
	cmds=()
	for p in "${missing[@]}"; do
		case "$p" in
		chromium*) cmds+=("brew install --cask chromium") ;;
		tmux) cmds+=("brew install tmux") ;;
		nodejs | npm) cmds+=("brew install node") ;;
		esac
	done
	[[ ${#cmds[@]} -gt 0 ]] && printf '  %s\n' "${cmds[@]}" | sort -u >&2
	;;
*)
	names() { # map generic names to a distribution's
		local out=() p
		for p in "${missing[@]}"; do
			case "$p" in
			chromium*) out+=("$1") ;;
			xvfb) out+=("$2") ;;
			xauth) out+=("$3") ;;
			tmux) out+=(tmux) ;;
			nodejs) out+=(nodejs) ;;
			npm) out+=(npm) ;;
			openssh-client) out+=(openssh-clients) ;;
			x11-utils) out+=(xprop) ;;
			esac
		done
		echo "${out[*]}"
	}
	if have dnf; then
		echo "  sudo dnf install $(names chromium xorg-x11-server-Xvfb xorg-x11-xauth)" >&2
	elif have pacman; then
		echo "  sudo pacman -S $(names chromium xorg-server-xvfb xorg-xauth)" >&2
	elif have zypper; then
		echo "  sudo zypper install $(names chromium xorg-x11-server-Xvfb xauth)" >&2
	elif have apk; then
		echo "  sudo apk add $(names chromium xvfb xauth)" >&2
	else
		echo "  ${missing[*]} (Chromium or Chrome, Xvfb, xauth, tmux, Node.js, npm) from your package manager" >&2
	fi
	;;
esac
echo "deps: continuing; tests that need a missing program skip or fail with its name" >&2
