package activities

import (
	"context"

	"github.com/fenixrt/fenix/contract"
	"github.com/fenixrt/fenix/fenixerr"
)

// RunSkillInput is the skill flow's input.
type RunSkillInput struct {
	Mode    string                `json:"mode"`
	Request contract.SkillRequest `json:"request"`
}

// RunSkillResult is a skill operation's preset output.
type RunSkillResult struct {
	Content string              `json:"content"`
	Data    map[string]any      `json:"data,omitempty"`
	Trace   contract.TraceEntry `json:"trace"`
}

// RunSkill performs a skill operation (list, load, read a file, install).
func (a *Activities) RunSkill(_ context.Context, in RunSkillInput) (RunSkillResult, error) {
	return fail[RunSkillResult](fenixerr.New(fenixerr.TypeToolUnavailable, "skill operation %q: this worker has no skills catalog configured", in.Mode))
}
