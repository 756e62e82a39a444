package observability

import (
	"context"
	"errors"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/temporal"
)

// StageRecorder is the part of activities.Recorder the stage interceptor
// needs; Metrics implements both.
type StageRecorder interface {
	StageDone(stage string, d time.Duration, errType string)
}

// StageInterceptor records every activity's duration and failure type as
// a stage metric, so stages need no metrics code of their own. It runs in
// activities only: workflow code replays and would count twice.
func StageInterceptor(r StageRecorder) interceptor.WorkerInterceptor {
	return &stageInterceptor{recorder: r}
}

type stageInterceptor struct {
	interceptor.WorkerInterceptorBase
	recorder StageRecorder
}

func (s *stageInterceptor) InterceptActivity(_ context.Context, next interceptor.ActivityInboundInterceptor) interceptor.ActivityInboundInterceptor {
	return &stageActivity{ActivityInboundInterceptorBase: interceptor.ActivityInboundInterceptorBase{Next: next}, recorder: s.recorder}
}

type stageActivity struct {
	interceptor.ActivityInboundInterceptorBase
	recorder StageRecorder
}

func (a *stageActivity) ExecuteActivity(ctx context.Context, in *interceptor.ExecuteActivityInput) (any, error) {
	started := time.Now()
	out, err := a.Next.ExecuteActivity(ctx, in)
	a.recorder.StageDone(activity.GetInfo(ctx).ActivityType.Name, time.Since(started), errorType(err))
	return out, err
}

// errorType names a stage failure for the metric's label.
func errorType(err error) string {
	if err == nil {
		return ""
	}
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) && appErr.Type() != "" {
		return appErr.Type()
	}
	if errors.Is(err, context.Canceled) {
		return "CanceledError"
	}
	return "UnclassifiedError"
}
