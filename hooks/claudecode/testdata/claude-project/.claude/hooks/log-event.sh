#!/usr/bin/env bash
# Appends every event it is given to .claude/logs/events.jsonl.
mkdir -p "$CLAUDE_PROJECT_DIR/.claude/logs"
{ cat; echo; } >> "$CLAUDE_PROJECT_DIR/.claude/logs/events.jsonl"
