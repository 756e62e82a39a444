#!/usr/bin/env python3
"""PostToolUse for Bash: keeps a log of every command and what it printed."""
import json
import os
import sys

data = json.load(sys.stdin)
response = data.get("tool_response", {})
entry = {
    "command": data.get("tool_input", {}).get("command"),
    "stdout": response.get("stdout"),
    "stderr": response.get("stderr"),
    "interrupted": response.get("interrupted"),
    "tool_use_id": data.get("tool_use_id"),
}
log_dir = os.path.join(os.environ["CLAUDE_PROJECT_DIR"], ".claude", "logs")
os.makedirs(log_dir, exist_ok=True)
with open(os.path.join(log_dir, "commands.jsonl"), "a") as log:
    log.write(json.dumps(entry) + "\n")
