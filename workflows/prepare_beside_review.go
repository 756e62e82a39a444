package workflows

import (
	"github.com/fenixrt/fenix/activities"
	"github.com/fenixrt/fenix/contract"
)

// preparesBesideReview is whether this assignment's PrepareTurn runs
// beside its ReviewToolCall (shapePrepareBesideReview): a tool call whose
// stages run locally and whose transcript needs no StoreContext first.
// The tool flow never reads the assembled messages, so PrepareTurn need
// not wait for the review; it still runs before any hook, so every check
// it makes (the workspace root, the context's size) fails the run as
// before.
func (r *assignmentRun) preparesBesideReview(inputBytes int) bool {
	return r.shape >= shapePrepareBesideReview && r.reviewsFirst() && r.mode.localRepeatable() &&
		!needsOffload(r.a, inputBytes)
}

// reviewBesidePrepare is run's start for preparesBesideReview: both
// stages in flight at once, then SessionStart, CompactContext when
// PrepareTurn found something to compact, and the tool flow.
func (r *assignmentRun) reviewBesidePrepare() (*contract.Output, error) {
	in := prepareTurnInput(r.session, r.a, 0, true)
	prepare := startStage(r.stageCtx, r.session, true, activities.StagePrepareTurn, prepareTurnOptions, acts.PrepareTurn, in)
	var prep activities.PrepareTurnResult
	var prepErr error
	awaited := false
	await := func() {
		if !awaited {
			awaited = true
			prepErr = r.getStage(r.stageCtx, activities.StagePrepareTurn, prepare, &prep)
		}
	}
	reviewed, err := r.review(await)
	if err != nil {
		return nil, err
	}
	await()
	r.startReviewed(reviewed)
	if err := r.goOn(); err != nil {
		return nil, err
	}
	if _, err := compactPrepared(r.session, r.a, in, prep, prepErr, 0); err != nil {
		return nil, err
	}
	return r.toolFlow()
}
