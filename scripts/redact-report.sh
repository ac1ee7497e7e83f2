#!/usr/bin/env bash
# Recall of artobs' redaction per secret and per placement, with gitleaks'
# detector on the same drafts (raw and decoded) beside it, and false
# positives on real text (internal/tools/redactreport; docs/artobs.md
# records the figures and the counting rule).
#
#   scripts/redact-report.sh [CORPUS_DIR] [redactreport flags…]
#
# CORPUS_DIR holds tps.jsonl in gitleaks' published-sample format (one
# {"rule","secret","fixed_prefix","contexts"} per line); without it only
# the samples generated from gitleaks' rules and art's provider formats are
# measured. The real-text corpus is built now: this repository's
# `git log -p`, the go.sum, package-lock.json and YAML files of the Go
# module cache, and the `git log -p` of every repository in REDACT_FP_GIT
# (space-separated paths). Source code (the Go module cache's .go, .py, .js
# … files, no tests) is a second real-text set, counted apart. Exit status
# 1: a target does not hold.
set -euo pipefail
cd "$(dirname "$0")/.."
args=(-check -fp-git . -fp-dir "$(go env GOMODCACHE)" -src "$(go env GOMODCACHE)")
for r in ${REDACT_FP_GIT:-}; do
	args+=(-fp-git "$r")
done
if [ $# -gt 0 ] && [ "${1#-}" = "$1" ]; then
	args+=(-corpus "$1")
	shift
fi
exec go run ./internal/tools/redactreport "${args[@]}" "$@"
