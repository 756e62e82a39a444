package integration

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/fenixrt/fenix/contract"
	"github.com/fenixrt/fenix/workflows"
)

// kernelInbox stands in for the kernel: it collects Fenix's report
// signals until a terminal one arrives.
func kernelInbox(ctx workflow.Context) ([]contract.Report, error) {
	var reports []contract.Report
	ch := workflow.GetSignalChannel(ctx, workflows.DefaultReportSignal)
	for {
		var r contract.Report
		ch.Receive(ctx, &r)
		reports = append(reports, r)
		if r.Kind == contract.ReportComplete || r.Kind == contract.ReportFail {
			return reports, nil
		}
	}
}

func TestReportsAreDeliveredToTheKernel(t *testing.T) {
	w := startWorker(t)
	kernelQueue := newTaskQueue(t)
	kw := worker.New(server.Client(), kernelQueue, worker.Options{})
	kw.RegisterWorkflowWithOptions(kernelInbox, workflow.RegisterOptions{Name: "KernelInbox"})
	require.NoError(t, kw.Start())
	defer kw.Stop()

	ctx := context.Background()
	inbox, err := server.Client().ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "it-kernel-inbox", TaskQueue: kernelQueue, WorkflowExecutionTimeout: time.Minute}, "KernelInbox")
	require.NoError(t, err)

	a := assignment("reported", map[string]any{"tool_name": "calculator", "arguments": map[string]any{"expression": "9 - 2"}})
	a["report_to"] = map[string]any{"workflow_id": inbox.GetID()}
	res, _ := runAssignment(t, w.queue, a)
	require.Equal(t, contract.StatusCompleted, res.Status)

	var delivered []contract.Report
	require.NoError(t, inbox.Get(ctx, &delivered))
	require.Len(t, delivered, len(res.Reports))
	for i := range delivered {
		assert.Equal(t, res.Reports[i].Sequence, delivered[i].Sequence)
		assert.Equal(t, res.Reports[i].Kind, delivered[i].Kind)
	}
	assert.Equal(t, "The calculator returned 7.", delivered[len(delivered)-1].Output.Content)
}
