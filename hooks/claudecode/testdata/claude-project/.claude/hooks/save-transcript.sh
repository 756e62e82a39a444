#!/usr/bin/env bash
# PreCompact: keeps a copy of the transcript before it is compacted.
transcript=$(python3 -c 'import json, sys; print(json.load(sys.stdin)["transcript_path"])')
mkdir -p "$CLAUDE_PROJECT_DIR/.claude/logs"
cp "$transcript" "$CLAUDE_PROJECT_DIR/.claude/logs/pre-compact.jsonl"
