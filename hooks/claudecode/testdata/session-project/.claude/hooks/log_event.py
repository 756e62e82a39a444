#!/usr/bin/env python3
"""Append the hook's input to .claude/hook-events.jsonl (one JSON object a line)."""
import fcntl
import json
import os
import sys

event = json.load(sys.stdin)
log = os.path.join(os.environ.get("CLAUDE_PROJECT_DIR", "."), ".claude", "hook-events.jsonl")
with open(log, "a", encoding="utf-8") as f:
    fcntl.flock(f, fcntl.LOCK_EX)
    f.write(json.dumps(event, sort_keys=True) + "\n")
sys.exit(0)
