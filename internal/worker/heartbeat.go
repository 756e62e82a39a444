package worker

import (
	"context"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/interceptor"

	"github.com/fenixrt/fenix/activities"
)

// selfHeartbeating activities record heartbeats with their own details
// (streamed bytes, the resource they created); the interceptor leaves them
// alone so it does not overwrite those details.
var selfHeartbeating = map[string]bool{"ExecuteTool": true, "CallModel": true}

// heartbeatInterceptor heartbeats for every other activity that has a
// heartbeat timeout, while it runs. Without it a stage whose completion
// was lost (a server outage longer than the SDK's report timeout) or whose
// worker died would only be noticed at its start-to-close timeout.
type heartbeatInterceptor struct {
	interceptor.WorkerInterceptorBase
}

func (*heartbeatInterceptor) InterceptActivity(_ context.Context, next interceptor.ActivityInboundInterceptor) interceptor.ActivityInboundInterceptor {
	return &heartbeatActivity{ActivityInboundInterceptorBase: interceptor.ActivityInboundInterceptorBase{Next: next}}
}

type heartbeatActivity struct {
	interceptor.ActivityInboundInterceptorBase
}

func (a *heartbeatActivity) ExecuteActivity(ctx context.Context, in *interceptor.ExecuteActivityInput) (any, error) {
	if selfHeartbeating[activity.GetInfo(ctx).ActivityType.Name] {
		return a.Next.ExecuteActivity(ctx, in)
	}
	stop := activities.StartHeartbeats(ctx, nil)
	defer stop()
	return a.Next.ExecuteActivity(ctx, in)
}
