#!/usr/bin/env bash
# OCR and PDF tools for the AI gateway's document capture (aigw/document) and its tests.
#
#   scripts/ocr.sh install   install tesseract (with English data) and poppler's pdftotext with
#                            apt if missing; idempotent
#   scripts/ocr.sh check     exit 0 when tesseract and pdftotext are on PATH, print their versions
#
# The controller runs without them: without tesseract, images and scanned PDF pages are
# refused (422); without pdftotext, PDFs are read by the pure-Go reader.
set -euo pipefail

say() { echo "ocr.sh: $*" >&2; }
die() { say "ERROR: $*"; exit 1; }

usage() {
	echo "usage: scripts/ocr.sh install|check" >&2
	exit 2
}

have_all() {
	command -v tesseract >/dev/null && command -v pdftotext >/dev/null &&
		tesseract --list-langs 2>/dev/null | grep -qx eng
}

install_ocr() {
	if have_all; then
		return 0
	fi
	local sudo=()
	if [[ $EUID -ne 0 ]]; then
		command -v sudo >/dev/null || die "tesseract/pdftotext are not installed and we are not root (no sudo either): install tesseract-ocr tesseract-ocr-eng poppler-utils"
		sudo=(sudo)
	fi
	say "installing tesseract-ocr tesseract-ocr-eng poppler-utils with apt-get"
	export DEBIAN_FRONTEND=noninteractive
	"${sudo[@]}" apt-get -o DPkg::Lock::Timeout=600 update >&2 || die "apt-get update failed"
	"${sudo[@]}" apt-get -o DPkg::Lock::Timeout=600 install -y --no-install-recommends tesseract-ocr tesseract-ocr-eng poppler-utils >&2 ||
		die "apt-get install tesseract-ocr tesseract-ocr-eng poppler-utils failed"
	have_all || die "installed the packages but tesseract (with eng) or pdftotext is still missing"
}

check() {
	have_all || die "tesseract (with English data) or pdftotext is missing: scripts/ocr.sh install"
	say "$(tesseract --version 2>&1 | head -n 1); $(pdftotext -v 2>&1 | head -n 1)"
}

case "${1:-}" in
install)
	[[ $# -eq 1 ]] || usage
	install_ocr
	check
	;;
check)
	[[ $# -eq 1 ]] || usage
	check
	;;
*) usage ;;
esac
