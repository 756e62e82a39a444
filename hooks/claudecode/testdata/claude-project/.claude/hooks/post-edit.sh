#!/usr/bin/env bash
# PostToolUse for Write/Edit: reminds the agent to format what it wrote.
file_path=$(python3 -c 'import json, sys; print(json.load(sys.stdin).get("tool_response", {}).get("filePath", ""))')
printf '{"hookSpecificOutput":{"hookEventName":"PostToolUse","additionalContext":"%s was written; run the formatter before committing."}}\n' "$(basename "$file_path")"
