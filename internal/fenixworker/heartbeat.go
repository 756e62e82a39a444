package fenixworker

import (
	"context"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/interceptor"
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
	info := activity.GetInfo(ctx)
	if info.IsLocalActivity || info.HeartbeatTimeout <= 0 || selfHeartbeating[info.ActivityType.Name] {
		return a.Next.ExecuteActivity(ctx, in)
	}
	every := min(info.HeartbeatTimeout/3, time.Second)
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		ticker := time.NewTicker(every)
		defer ticker.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-ticker.C:
				activity.RecordHeartbeat(ctx)
			}
		}
	}()
	defer func() { close(done); <-stopped }()
	return a.Next.ExecuteActivity(ctx, in)
}
