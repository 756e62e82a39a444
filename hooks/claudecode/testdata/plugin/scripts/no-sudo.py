#!/usr/bin/env python3
"""Plugin guard: no privilege escalation. Prints a JSON deny and exits 1,
which Claude Code honours because the JSON decides on any exit code."""
import json
import os
import re
import sys

data = json.load(sys.stdin)
command = data.get("tool_input", {}).get("command", "")
if re.search(r"(^|[;&|]\s*)(sudo|su)\s", command):
    print(json.dumps({"hookSpecificOutput": {
        "hookEventName": "PreToolUse",
        "permissionDecision": "deny",
        "permissionDecisionReason": "privilege escalation is refused by the no-sudo plugin",
    }}))
    with open(os.path.join(os.environ["CLAUDE_PLUGIN_DATA"], "denied.log"), "a") as log:
        log.write(command + "\n")
    sys.exit(1)
