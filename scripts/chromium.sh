#!/usr/bin/env bash
# Headless Chromium for the browser tests (the NOC page: controller/server/noc_test.go).
#
#   scripts/chromium.sh install   install chromium and chromium-driver with apt if missing; idempotent
#   scripts/chromium.sh check     exit 0 when chromium is installed, print its path and version
#
# The tests drive Chromium over the DevTools protocol (chromedp) from /usr/bin/chromium, or from
# EDGEWAN_CHROMIUM when set; they fail, never skip, when it is missing.
set -euo pipefail

say() { echo "chromium.sh: $*" >&2; }
die() { say "ERROR: $*"; exit 1; }

usage() {
	echo "usage: scripts/chromium.sh install|check" >&2
	exit 2
}

bin() {
	local b
	for b in "${EDGEWAN_CHROMIUM:-}" /usr/bin/chromium "$(command -v chromium 2>/dev/null || true)"; do
		if [[ -n "$b" && -x "$b" ]]; then
			echo "$b"
			return 0
		fi
	done
	return 1
}

install_chromium() {
	if bin >/dev/null && command -v chromedriver >/dev/null; then
		return 0
	fi
	local sudo=()
	if [[ $EUID -ne 0 ]]; then
		command -v sudo >/dev/null || die "not root and no sudo: install chromium chromium-driver yourself"
		sudo=(sudo)
	fi
	say "installing chromium and chromium-driver with apt"
	# A lock held by a parallel apt run is waited for rather than failed on.
	"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 update -qq ||
		say "apt-get update failed; trying the install with the current package lists"
	"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 install -y -qq \
		--no-install-recommends chromium chromium-driver >/dev/null
	bin >/dev/null || die "chromium is still missing after apt-get install"
}

case "${1:-}" in
install) install_chromium ;;
check)
	b="$(bin)" || die "chromium is not installed (scripts/chromium.sh install)"
	echo "$b"
	"$b" --version
	;;
*) usage ;;
esac
