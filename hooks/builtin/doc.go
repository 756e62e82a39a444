// Package builtin holds Fenix's own lifecycle hooks, registered by the
// worker around the hooks loaded from settings files: CancellationHook
// (blocks PreToolUse once the workflow is cancelled), AuditLogHook (writes
// every tool call, tool failure and session stop to the audit store), RedactionHook (masks secrets in tool
// output, registered last) and MetricsHook (counts tool calls, steps,
// errors and tokens in workflow state). CancellationHook and MetricsHook are
// pure and deterministic, so workflow code may drive them.
package builtin
