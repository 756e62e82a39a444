#!/usr/bin/env bash
# PreToolUse guard for Write/Edit: secrets, git internals and anything
# outside the project are off limits. Answers with a JSON deny.
input=$(cat)
file_path=$(printf '%s' "$input" | python3 -c 'import json, sys; print(json.load(sys.stdin).get("tool_input", {}).get("file_path", ""))')
reason=""
case "$file_path" in
  "$CLAUDE_PROJECT_DIR"/*) ;;
  *) reason="$file_path is outside the project" ;;
esac
name=$(basename "$file_path")
case "$name" in
  .env.example) ;;
  .env|.env.*|*.pem|id_rsa*) reason="$name holds secrets and is never edited by the agent" ;;
esac
case "$file_path" in
  */.git/*) reason="files under .git are managed by git" ;;
esac
if [ -n "$reason" ]; then
  printf '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"%s"}}\n' "$reason"
fi
exit 0
