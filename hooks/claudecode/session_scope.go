package claudecode

import "github.com/fenixrt/fenix/hooks"

// ConversationScoped makes a Claude Code dialect hook's SessionStart and
// SessionEnd follow the conversation (Claude Code's session) instead of
// the run; Fenix dialect hooks keep the seed's per-run events.
func (h *ExternalHook) ConversationScoped() bool { return h.dialect == DialectClaude }

// claudeSession sets the Claude Code identity fields of an event: the
// conversation as session_id (fenix-shape 6), and in a subagent the
// parent's session_id and transcript_path with the subagent as agent_id.
// Runs of older shapes carry neither and keep the run as the session.
func (h *ExternalHook) claudeSession(in map[string]any, s hooks.Session) {
	if s.ConversationSessionID != "" {
		in["session_id"] = s.ConversationSessionID
	}
	if !s.IsSubagent {
		return
	}
	in["agent_id"] = s.SessionID
	in["agent_type"] = s.Profile
	if s.Parent != nil {
		in["transcript_path"] = s.Parent.TranscriptPath
	}
}
