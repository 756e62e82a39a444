#!/usr/bin/env bash
# SessionStart: plain stdout becomes context for the model.
cat > /dev/null
echo "Project demo; the default branch is main; tests run with make test."
