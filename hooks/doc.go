// Package hooks is Fenix's lifecycle hook registry: the events an agent run
// goes through (session start and stop, prompt submission, before and after
// every tool call and tool batch, permission requests, denials and
// notifications, step completion, the agent's turn stop, subagents,
// compaction, errors), the actions a hook may answer with, and the rules
// that aggregate the answers of several hooks into one verdict.
//
// The registry knows no hook format and holds no hook of its own. Wings
// import it, never the other way round:
//
//   - hooks/claudecode loads hook settings files in Claude Code's format
//     (a project's .claude/settings.json, a plugin's hooks/hooks.json, a
//     Fenix-native file) as command and http hooks speaking Claude Code's
//     protocol, and hands each file to Registry.AddSource as a Source.
//   - hooks/builtin holds Fenix's own hooks: cancellation, metrics, the
//     audit log and secret redaction.
//
// A Source is the registry's neutral description of a loaded set of hooks:
// its hooks, its bytes (what PolicyFingerprint hashes), the paths its
// hooks must not have written, and free-form labels for the log.
//
// A hook is any type implementing AgentHook. Embedding Base gives no-op
// defaults, so a hook writes only the methods it cares about:
//
//	type denyRm struct{ hooks.Base }
//
//	func (denyRm) Name() string { return "deny-rm" }
//
//	func (denyRm) PreToolUse(ctx context.Context, ev hooks.PreToolUseEvent) (hooks.PreToolUseAction, error) {
//		if strings.Contains(fmt.Sprint(ev.ToolInput["command"]), "rm -rf") {
//			return hooks.Block("rm -rf is not allowed"), nil
//		}
//		return hooks.Continue(), nil
//	}
//
//	registry.Add(denyRm{})
//
// Aggregation (Registry):
//
//   - PreToolUse runs hooks in registration order. The first Block wins and
//     short-circuits; the last MutateInput with updated_args wins for the
//     final arguments; every additional_context is joined with "\n"; the
//     first PermissionRequired is recorded in the result (a later Block
//     still wins over it) and the caller decides whether to ask a human.
//   - PostToolUse runs every hook; the last MutateOutput wins.
//   - PermissionRequest runs hooks in order; the first deny wins and
//     short-circuits, otherwise the first allow wins, otherwise no hook had
//     an opinion and a human is asked. Deny beats allow so that a permissive
//     hook registered early cannot override a guard registered later.
//   - Across PreToolUse hooks the precedence is Claude Code's: deny > defer
//     > ask > allow (a defer outranks any ask). An explicit allow
//     (AllowCall) is recorded with its hook and overrides nothing.
//   - A PermissionPolicy (SetPermissionPolicy; Claude Code's permission
//     rules) judges the call after the hooks, on their final arguments:
//     its deny blocks even what a hook allowed, its ask asks, its allow is
//     recorded; a hook's block stands whatever it says.
//   - A Selective hook that does not apply to an occurrence (its matcher
//     does not select the tool) is skipped and not listed in decisions.
//   - UserPromptSubmit: the first block wins and ends the turn; contexts
//     accumulate. Stop: every hook runs; any block or feedback keeps the
//     agent going with the joined reasons. PostToolBatch: the first block
//     stops the loop. PermissionDenied: any retry is kept.
//   - A Halt (Claude Code's "continue": false) in any answer ends the turn
//     and is reported in the aggregated result; it takes precedence over
//     the event's own decision.
//   - Every other event runs every hook and returns a Summary of who ran
//     and who failed, with the context FeedbackHooks gave, for the trace.
//
// Hooks implementing ConcurrentHook (the command and http hooks of
// hooks/claudecode) run concurrently with their concurrent neighbours, at
// most WithConcurrency at once; each sees the event as it stood before the
// run, and their answers are combined in registration order by the rules
// above, whatever finished first. Other hooks run one at a time.
//
// A hook that returns an error has the error recorded in its HookDecision
// and its action applied as returned. A hook that panics is recovered: the
// panic is recorded and treated as Continue (fail-open), unless the hook
// reports FailClosed() true, in which case PreToolUse becomes Block and
// PermissionRequest becomes deny, with a reason naming the hook.
//
// Where hooks run: the Registry and its Run methods do I/O only through the
// hooks they hold, so a registry of command hooks and the audit log hook
// runs inside Temporal activities and its results (plain JSON) travel back
// as activity results. The metrics and cancellation hooks are pure and
// deterministic and may be driven from workflow code, where the metrics are
// workflow state; a Registry used there must be built with
// WithClock(workflow.Now-based clock), since its default clock is time.Now.
package hooks
