package integration

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"

	"github.com/fenixrt/fenix/internal/harness/devserver"
)

// TestEncryptedWorkerServesMetricsAndCodec runs the worker binary with a
// payload key: history holds only ciphertext, the starter (same key)
// reads the result, the codec server decodes for a bearer of the token,
// and /metrics exposes both the SDK's and Fenix's metrics.
func TestEncryptedWorkerServesMetricsAndCodec(t *testing.T) {
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	env := []string{
		"FENIX_CODEC_KEY=" + base64.StdEncoding.EncodeToString(key),
		"FENIX_CODEC_AUTH_TOKEN=s3cret-token",
		"FENIX_CODEC_UI_ORIGIN=" + server.UIURL,
	}
	port, err := devserver.FreePort()
	require.NoError(t, err)
	opsAddr := fmt.Sprintf("127.0.0.1:%d", port)
	queue := newTaskQueue(t)
	cmd := exec.Command(filepath.Join(binDir, "worker"), "-task-queue", queue, "-data-dir", t.TempDir(), "-http-addr", opsAddr, "-log-format", "text")
	cmd.Env = append(os.Environ(), append(env, "TEMPORAL_ADDRESS="+server.HostPort)...)
	var logs lockedBuffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	require.NoError(t, cmd.Start())
	defer func() { _ = cmd.Process.Signal(syscall.SIGTERM); _ = cmd.Wait() }()
	require.Eventually(t, func() bool {
		resp, err := http.Get("http://" + opsAddr + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, 30*time.Second, 100*time.Millisecond, "worker ready; logs:\n%s", logs.String())

	out, code := runBinary(t, "starter", append(env, "FENIX_TASK_QUEUE="+queue), "run", "-id", "it-encrypted", "examples/calculator.json")
	require.Equal(t, 0, code, out)
	assert.Contains(t, out, "The calculator returned 4.")

	// History as the server stores it: no plaintext, encrypted payloads.
	iter := server.Client().GetWorkflowHistory(context.Background(), "it-encrypted", "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	var completed *commonpb.Payload
	var raw bytes.Buffer
	for iter.HasNext() {
		e, err := iter.Next()
		require.NoError(t, err)
		b, _ := e.Marshal()
		raw.Write(b)
		if a := e.GetWorkflowExecutionCompletedEventAttributes(); a != nil {
			completed = a.GetResult().GetPayloads()[0]
		}
	}
	assert.NotContains(t, raw.String(), "The calculator returned", "no plaintext output in history")
	require.NotNil(t, completed)
	assert.Equal(t, "binary/encrypted", string(completed.GetMetadata()["encoding"]))

	// The codec server decodes for an authorized caller only.
	body, _ := json.Marshal(map[string]any{"payloads": []any{map[string]any{
		"metadata": map[string]string{
			"encoding":          base64.StdEncoding.EncodeToString(completed.Metadata["encoding"]),
			"encryption-key-id": base64.StdEncoding.EncodeToString(completed.Metadata["encryption-key-id"]),
			"encryption-cipher": base64.StdEncoding.EncodeToString(completed.Metadata["encryption-cipher"]),
		},
		"data": base64.StdEncoding.EncodeToString(completed.Data),
	}}})
	decode := func(token string) (int, string) {
		req, _ := http.NewRequest(http.MethodPost, "http://"+opsAddr+"/codec/decode", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Namespace", "default")
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	status, _ := decode("")
	assert.Equal(t, http.StatusUnauthorized, status)
	status, decoded := decode("s3cret-token")
	require.Equal(t, http.StatusOK, status, decoded)
	var answer struct {
		Payloads []struct{ Data []byte } `json:"payloads"`
	}
	require.NoError(t, json.Unmarshal([]byte(decoded), &answer))
	require.Len(t, answer.Payloads, 1)
	assert.Contains(t, string(answer.Payloads[0].Data), "The calculator returned 4.")

	resp, err := http.Get("http://" + opsAddr + "/metrics")
	require.NoError(t, err)
	metrics, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{`fenix_tool_calls_total{status="ok",tool="calculator"} 1`, `fenix_stage_duration_seconds_count{stage="ReviewToolCall"}`, "temporal_"} {
		assert.True(t, strings.Contains(string(metrics), want), "metrics lack %q", want)
	}
}
