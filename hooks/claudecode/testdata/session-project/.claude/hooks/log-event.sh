#!/usr/bin/env bash
# Append the hook's stdin JSON to .claude/hook-events.jsonl.
set -euo pipefail
input=$(cat)
log="${CLAUDE_PROJECT_DIR:-.}/.claude/hook-events.jsonl"
exec 9>>"$log"
flock 9
printf '%s\n' "$(printf '%s' "$input" | tr -d '\n')" >&9
