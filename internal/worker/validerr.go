package worker

import (
	"context"

	"go.temporal.io/sdk/interceptor"

	"github.com/fenixrt/fenix/fenixerr"
)

// validErrorsInterceptor makes every activity's error text valid UTF-8
// (fenixerr.ValidUTF8), also of errors that did not go through
// fenixerr.ToTemporal: one invalid byte in a failure message makes it
// impossible to report, and the run never ends.
type validErrorsInterceptor struct {
	interceptor.WorkerInterceptorBase
}

func (*validErrorsInterceptor) InterceptActivity(_ context.Context, next interceptor.ActivityInboundInterceptor) interceptor.ActivityInboundInterceptor {
	return &validErrorsActivity{ActivityInboundInterceptorBase: interceptor.ActivityInboundInterceptorBase{Next: next}}
}

type validErrorsActivity struct {
	interceptor.ActivityInboundInterceptorBase
}

func (a *validErrorsActivity) ExecuteActivity(ctx context.Context, in *interceptor.ExecuteActivityInput) (any, error) {
	out, err := a.Next.ExecuteActivity(ctx, in)
	return out, fenixerr.ValidUTF8(err)
}
