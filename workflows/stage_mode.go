package workflows

import (
	"github.com/fenixrt/fenix/contract"
)

// stageMode is where a run's stages execute. A regular activity costs a
// round trip through the server (two workflow-history tasks); a local
// activity runs inside the workflow task and is recorded as one marker
// with its result, so replay never re-decides it.
type stageMode int

const (
	// modeRegular runs every stage as a regular activity: one row with
	// its summary per stage in the Web UI.
	modeRegular stageMode = iota
	// modeLocalPure runs the stages without I/O (review, projection,
	// finalization, HandleError) locally: the local-pure-stages default.
	modeLocalPure
	// modeFast also runs locally every stage that is safe to repeat and
	// needs no particular host: context preparation, compaction, hooks,
	// extractive summaries, skill reads and Local tools. What must not run
	// twice or must run on a given host stays regular: side-effecting and
	// registry-backed tools, model calls, skill installs.
	modeFast
)

func (m stageMode) localPure() bool       { return m >= modeLocalPure }
func (m stageMode) localRepeatable() bool { return m == modeFast }

func (m stageMode) String() string {
	switch m {
	case modeRegular:
		return contract.StagesRegular
	case modeLocalPure:
		return "local_pure"
	default:
		return contract.StagesFast
	}
}

// stageModeFor applies the assignment's execution options: `stages`
// ("fast" | "regular"), or the older `pure_stages`, where "local" means
// at least local pure stages.
func (s *session) stageModeFor(o contract.ExecutionOptions) stageMode {
	switch {
	case o.Stages == contract.StagesRegular:
		return modeRegular
	case o.Stages == contract.StagesFast:
		return modeFast
	case o.PureStages == contract.PureStagesRegular:
		return modeRegular
	case o.PureStages == contract.PureStagesLocal:
		return max(modeLocalPure, s.defaultMode)
	}
	return s.defaultMode
}
