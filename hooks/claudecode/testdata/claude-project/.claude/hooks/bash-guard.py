#!/usr/bin/env python3
"""PreToolUse guard for Bash: refuses destructive commands (exit 2)."""
import json
import re
import sys

DANGEROUS = [
    (r"\brm\s+(-[a-zA-Z]*r[a-zA-Z]*f[a-zA-Z]*|-[a-zA-Z]*f[a-zA-Z]*r[a-zA-Z]*|-r\s+-f|-f\s+-r|--recursive\s+--force|--force\s+--recursive)(\s|$)",
     "recursive forced delete (rm -rf)"),
    (r"\bgit\s+push\b.*\s(--force|-f)(\s|$)", "force push"),
    (r"\bmkfs(\.\w+)?\b", "formatting a filesystem"),
    (r"\bdd\b.*\bof=/dev/", "writing to a raw device"),
    (r"\b(curl|wget)\b[^|]*\|\s*(sudo\s+)?(ba|z)?sh\b", "piping a download into a shell"),
]

data = json.load(sys.stdin)
if data.get("tool_name") != "Bash":
    sys.exit(0)
command = data.get("tool_input", {}).get("command", "")
for pattern, what in DANGEROUS:
    if re.search(pattern, command):
        print(f"Blocked by project policy: {what} is not allowed ({command})", file=sys.stderr)
        sys.exit(2)
sys.exit(0)
