#!/usr/bin/env python3
"""Log the session start and tell the model the project's conventions."""
import fcntl
import json
import os
import sys

event = json.load(sys.stdin)
project = os.environ.get("CLAUDE_PROJECT_DIR", ".")
with open(os.path.join(project, ".claude", "hook-events.jsonl"), "a", encoding="utf-8") as f:
    fcntl.flock(f, fcntl.LOCK_EX)
    f.write(json.dumps(event, sort_keys=True) + "\n")
# Like a project that sets up its toolchain for the session's commands.
env_file = os.environ.get("CLAUDE_ENV_FILE")
if env_file:
    with open(env_file, "a", encoding="utf-8") as f:
        f.write("export PROJECT_INDENT=tabs\n")
print(json.dumps({
    "hookSpecificOutput": {
        "hookEventName": "SessionStart",
        "additionalContext": "Session %s (%s): this project uses tabs." % (event.get("session_id"), event.get("source")),
    }
}))
