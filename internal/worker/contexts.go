package worker

import (
	"context"
	"fmt"
	"time"

	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/interceptor"

	"github.com/fenixrt/fenix/contextstore"
)

// ContextStore is the worker's context store.
func (w *Worker) ContextStore() contextstore.Store { return w.contexts }

// contextRunInterceptor tells the context store which run each activity
// acts for, so a shared store keeps what an open run stored or read.
type contextRunInterceptor struct {
	interceptor.WorkerInterceptorBase
}

func (*contextRunInterceptor) InterceptActivity(_ context.Context, next interceptor.ActivityInboundInterceptor) interceptor.ActivityInboundInterceptor {
	return &contextRunActivity{ActivityInboundInterceptorBase: interceptor.ActivityInboundInterceptorBase{Next: next}}
}

type contextRunActivity struct {
	interceptor.ActivityInboundInterceptorBase
}

func (a *contextRunActivity) ExecuteActivity(ctx context.Context, in *interceptor.ExecuteActivityInput) (any, error) {
	ctx = contextstore.WithRun(ctx, activity.GetInfo(ctx).WorkflowExecution.ID)
	return a.Next.ExecuteActivity(ctx, in)
}

// startContextGC runs the shared store's collection every GCInterval.
func (w *Worker) startContextGC() {
	store, ok := w.contexts.(*contextstore.Postgres)
	cfg := w.cfg.Contexts
	if !ok || cfg.GCInterval < 0 {
		return
	}
	w.contextGC = startPeriodic(cfg.GCInterval, func(ctx context.Context) {
		res, err := store.Collect(ctx, contextstore.GCOptions{Retention: cfg.Retention, OpenRuns: w.OpenRuns})
		switch {
		case ctx.Err() != nil:
		case err != nil:
			w.cfg.Logger.Warn("context store collection failed", "error", err)
		case !res.Skipped:
			w.cfg.Logger.Info("context store collected", "deleted_blobs", res.DeletedBlobs, "deleted_bytes", res.DeletedBytes,
				"dropped_refs", res.DroppedRefs, "open_runs", res.OpenRuns, "duration", res.Duration)
		}
	})
}

func (w *Worker) stopContextGC() { w.contextGC.stop() }

// periodic runs a function every interval until stopped.
type periodic struct {
	cancel context.CancelFunc
	done   chan struct{}
}

// startPeriodic calls tick every interval (first after one interval) with
// a context cancelled by stop.
func startPeriodic(interval time.Duration, tick func(ctx context.Context)) *periodic {
	ctx, cancel := context.WithCancel(context.Background())
	p := &periodic{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(p.done)
		ticker := time.NewTicker(interval)
		defer ticker.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-ticker.C:
				tick(ctx)
			}
		}
	}()
	return p
}

// stop ends the loop and waits for a tick in progress; nil is a no-op.
func (p *periodic) stop() {
	if p != nil {
		p.cancel()
		<-p.done
	}
}

// OpenRuns lists the workflow IDs of the namespace's running workflows.
func (w *Worker) OpenRuns(ctx context.Context) ([]string, error) {
	namespace := w.cfg.Namespace
	if namespace == "" {
		namespace = "default"
	}
	var ids []string
	var token []byte
	for {
		resp, err := w.client.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{
			Namespace: namespace, Query: `ExecutionStatus = "Running"`, PageSize: 1000, NextPageToken: token,
		})
		if err != nil {
			return nil, fmt.Errorf("list running workflows in %s: %w", namespace, err)
		}
		for _, e := range resp.GetExecutions() {
			ids = append(ids, e.GetExecution().GetWorkflowId())
		}
		if token = resp.GetNextPageToken(); len(token) == 0 {
			return ids, nil
		}
	}
}

// CollectContexts runs one collection of the shared store now (for tests
// and operators); it reports an error for a local store.
func (w *Worker) CollectContexts(ctx context.Context, retention time.Duration) (contextstore.GCResult, error) {
	store, ok := w.contexts.(*contextstore.Postgres)
	if !ok {
		return contextstore.GCResult{}, fmt.Errorf("the context store is %T, which has no collection (set %s to a postgres:// URL)", w.contexts, contextstore.Setting)
	}
	return store.Collect(ctx, contextstore.GCOptions{Retention: retention, OpenRuns: w.OpenRuns})
}
