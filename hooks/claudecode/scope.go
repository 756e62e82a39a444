package claudecode

// ConcernsTool is false when no matcher of the handler matches the tool's
// names, so the workflow can skip a tool event's stage that only such
// handlers subscribe to. "if" rules depend on the arguments and are left
// to the call itself.
func (h *ExternalHook) ConcernsTool(tool string) bool {
	names := toolNamesFor(h.dialect, tool)
	for _, s := range h.selectors {
		if s.matcher.Match(names...) {
			return true
		}
	}
	return false
}
