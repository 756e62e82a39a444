package mcpserver

import (
	"context"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The client side of the suite: each scenario stands up a server and
// judges the client that connects; the auth scenarios put it behind an
// authorization server. The client under test (./conformanceclient)
// connects and calls a tool as the worker does, signing in first with
// mcp.Login, as `worker mcp-login` does, where the scenario needs it.

// expectedClientFailures are the client scenarios of conformance 0.1.13
// that fail, and why. A scenario that starts passing fails the test, so
// the list stays true.
var expectedClientFailures = map[string]string{
	// The authorization server's metadata at the path-inserted URL names
	// the issuer without its /tenant1 path; RFC 8414 section 3.3 has the
	// client refuse metadata whose issuer differs (the go-sdk's check).
	"auth/metadata-var2": "suite 0.1.13's issuer lacks the tenant path",
	"auth/metadata-var3": "suite 0.1.13's issuer lacks the tenant path",
	// The worker cannot sign in again unattended: a 403 insufficient_scope
	// to a tool call is reported naming the scope for the operator to add
	// to oauth.scopes before `worker mcp-login` again.
	"auth/scope-step-up": "step-up needs the operator's new sign-in",
}

func TestConformanceClientScenarios(t *testing.T) {
	needNPM(t)
	client := filepath.Join(t.TempDir(), "conformanceclient")
	build := exec.Command("go", "build", "-o", client, "./conformanceclient")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "%s", out)
	suite := filepath.Join(npmDir, "node_modules", ".bin", "conformance")
	list, err := exec.Command("node", suite, "list").CombinedOutput()
	require.NoError(t, err, "%s", list)
	clientPart := string(list)[strings.Index(string(list), "Client scenarios"):]
	scenarios := regexp.MustCompile(`(?m)^\s*- (\S+)$`).FindAllStringSubmatch(clientPart, -1)
	require.NotEmpty(t, scenarios, "the suite lists no client scenarios:\n%s", list)
	passed := 0
	for _, m := range scenarios {
		scenario := m[1]
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		cmd := exec.CommandContext(ctx, "node", suite, "client", "--command", client, "--scenario", scenario, "-o", t.TempDir())
		cmd.Dir = npmDir
		raw, _ := cmd.CombinedOutput()
		cancel()
		ok := strings.Contains(string(raw), "OVERALL: PASSED")
		if ok {
			passed++
		}
		checks := regexp.MustCompile(`Passed: \d+/\d+, \d+ failed`).FindString(string(raw))
		if why, expected := expectedClientFailures[scenario]; expected {
			t.Logf("%-42s fails as expected (%s): %s", scenario, why, checks)
			assert.False(t, ok, "%s passes now: remove it from expectedClientFailures", scenario)
			continue
		}
		t.Logf("%-42s %s", scenario, checks)
		assert.True(t, ok, "scenario %s failed:\n%s", scenario, raw)
	}
	t.Logf("conformance client: %d of %d scenarios pass", passed, len(scenarios))
}
