package cluster

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fenixrt/fenix/contract"
)

func TestSmoke(t *testing.T) {
	requireCluster(t)
	res := run(t, "smoke-calc", assignment("smoke-calc", calculatorCall("c1", "6 * 7"), "calculator"))
	require.Equal(t, contract.StatusCompleted, res.Status, "%+v", res.Error)
	t.Log(res.Output.Content)
}
