package codec

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"
	sdklog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"
	"google.golang.org/protobuf/proto"
)

func newKey(t *testing.T, id string) Key {
	t.Helper()
	secret := make([]byte, KeySize)
	if _, err := rand.Read(secret); err != nil {
		t.Fatal(err)
	}
	return Key{ID: id, Secret: secret}
}

func newCodec(t *testing.T, keys ...Key) *Codec {
	t.Helper()
	kr, err := NewKeyring(keys...)
	if err != nil {
		t.Fatalf("NewKeyring: %v", err)
	}
	c, err := New(kr)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return c
}

func jsonPayload(t *testing.T, v any) *commonpb.Payload {
	t.Helper()
	p, err := converter.GetDefaultDataConverter().ToPayload(v)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestEncodeDecodeRoundTrip(t *testing.T) {
	c := newCodec(t, newKey(t, "k1"))
	orig := []*commonpb.Payload{jsonPayload(t, map[string]string{"secret": "hunter2"}), jsonPayload(t, nil)}

	enc, err := c.Encode(orig)
	if err != nil {
		t.Fatalf("Encode: %v", err)
	}
	for i, p := range enc {
		md := p.GetMetadata()
		if string(md[MetadataEncoding]) != EncodingEncrypted || string(md[MetadataEncryptionKeyID]) != "k1" || string(md[MetadataEncryptionCipher]) != CipherAES256GCM {
			t.Errorf("payload %d metadata = %q, want encoding %s, key k1, cipher %s", i, md, EncodingEncrypted, CipherAES256GCM)
		}
		if bytes.Contains(p.GetData(), []byte("hunter2")) {
			t.Errorf("payload %d carries the plaintext", i)
		}
	}
	// Fresh nonces: the same input never encrypts the same way twice.
	again, _ := c.Encode(orig[:1])
	if bytes.Equal(again[0].GetData(), enc[0].GetData()) {
		t.Error("two encryptions of one payload are identical: nonce reused")
	}

	dec, err := c.Decode(enc)
	if err != nil {
		t.Fatalf("Decode: %v", err)
	}
	for i := range orig {
		if !proto.Equal(dec[i], orig[i]) {
			t.Errorf("payload %d: decoded %v, want %v", i, dec[i], orig[i])
		}
	}
}

func TestDecodeTamperedCiphertextFails(t *testing.T) {
	c := newCodec(t, newKey(t, "k1"))
	enc, err := c.Encode([]*commonpb.Payload{jsonPayload(t, "payload")})
	if err != nil {
		t.Fatal(err)
	}
	data := enc[0].GetData()
	data[len(data)-1] ^= 0x01
	_, err = c.Decode(enc)
	if err == nil || !strings.Contains(err.Error(), `key "k1" does not authenticate this payload`) {
		t.Fatalf("Decode(tampered) error = %v, want an authentication failure naming key k1", err)
	}

	enc[0].Data = data[:10]
	if _, err := c.Decode(enc); err == nil || !strings.Contains(err.Error(), "truncated") {
		t.Fatalf("Decode(truncated) error = %v, want a truncation error", err)
	}
}

func TestDecodeUnknownKeyID(t *testing.T) {
	writer := newCodec(t, newKey(t, "2024-q1"))
	reader := newCodec(t, newKey(t, "2025-q3"), newKey(t, "2025-q2"))
	enc, err := writer.Encode([]*commonpb.Payload{jsonPayload(t, 1)})
	if err != nil {
		t.Fatal(err)
	}
	_, err = reader.Decode(enc)
	if !errors.Is(err, ErrUnknownKey) {
		t.Fatalf("Decode error = %v, want ErrUnknownKey", err)
	}
	for _, want := range []string{`key id "2024-q1"`, "loaded: 2025-q3, 2025-q2", EnvKeyFile} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
}

func TestKeyRotation(t *testing.T) {
	old, next := newKey(t, "old"), newKey(t, "new")
	before := newCodec(t, old)
	after := newCodec(t, next, old)

	oldPayloads, err := before.Encode([]*commonpb.Payload{jsonPayload(t, "written before rotation")})
	if err != nil {
		t.Fatal(err)
	}
	newPayloads, err := after.Encode([]*commonpb.Payload{jsonPayload(t, "written after rotation")})
	if err != nil {
		t.Fatal(err)
	}
	if id := string(newPayloads[0].GetMetadata()[MetadataEncryptionKeyID]); id != "new" {
		t.Errorf("after rotation payloads use key %q, want %q", id, "new")
	}
	if after.Keyring().ActiveKeyID() != "new" {
		t.Errorf("ActiveKeyID = %q, want new", after.Keyring().ActiveKeyID())
	}
	dec, err := after.Decode(append(oldPayloads, newPayloads...))
	if err != nil {
		t.Fatalf("rotated codec cannot read both generations: %v", err)
	}
	var s string
	if err := converter.GetDefaultDataConverter().FromPayload(dec[0], &s); err != nil || s != "written before rotation" {
		t.Errorf("old payload decoded to %q, %v", s, err)
	}
}

func TestDecodePassesThroughPlainPayloads(t *testing.T) {
	c := newCodec(t, newKey(t, "k1"))
	plain := jsonPayload(t, map[string]int{"n": 1})
	enc, err := c.Encode([]*commonpb.Payload{jsonPayload(t, "x")})
	if err != nil {
		t.Fatal(err)
	}
	dec, err := c.Decode([]*commonpb.Payload{plain, enc[0]})
	if err != nil {
		t.Fatalf("Decode: %v", err)
	}
	if dec[0] != plain {
		t.Errorf("plain payload was changed: %v", dec[0])
	}
}

func TestDecodeRejectsOtherCipherAndMissingKeyID(t *testing.T) {
	c := newCodec(t, newKey(t, "k1"))
	tests := []struct {
		md   map[string][]byte
		want string
	}{
		{map[string][]byte{MetadataEncoding: []byte(EncodingEncrypted), MetadataEncryptionKeyID: []byte("k1"), MetadataEncryptionCipher: []byte("ChaCha20")}, `cipher "ChaCha20" is not supported`},
		{map[string][]byte{MetadataEncoding: []byte(EncodingEncrypted)}, "has no encryption-key-id metadata"},
	}
	for _, tt := range tests {
		_, err := c.Decode([]*commonpb.Payload{{Metadata: tt.md, Data: make([]byte, 64)}})
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Decode(%q) error = %v, want %q", tt.md, err, tt.want)
		}
	}
}

type order struct {
	ID    string   `json:"id"`
	Items []string `json:"items"`
	Total float64  `json:"total"`
}

func TestDataConverterRoundTrip(t *testing.T) {
	dc := NewDataConverter(newCodec(t, newKey(t, "k1")))
	in := order{ID: "o-1", Items: []string{"apple", "pear"}, Total: 3.5}
	p, err := dc.ToPayload(in)
	if err != nil {
		t.Fatalf("ToPayload: %v", err)
	}
	if string(p.GetMetadata()[MetadataEncoding]) != EncodingEncrypted || bytes.Contains(p.GetData(), []byte("apple")) {
		t.Fatalf("payload is not encrypted: %v", p)
	}
	var out order
	if err := dc.FromPayload(p, &out); err != nil {
		t.Fatalf("FromPayload: %v", err)
	}
	if out.ID != in.ID || out.Total != in.Total || len(out.Items) != 2 || out.Items[1] != "pear" {
		t.Errorf("round trip = %+v, want %+v", out, in)
	}
}

func TestNilCodecMeansNoEncryption(t *testing.T) {
	var off *Codec // what FromEnv returns with no key configured
	p, err := NewDataConverter(off).ToPayload("plain")
	if err != nil {
		t.Fatal(err)
	}
	if enc := string(p.GetMetadata()[MetadataEncoding]); enc != "json/plain" {
		t.Errorf("encoding = %q, want json/plain", enc)
	}
	if _, err := NewHTTPHandler(off, ServerConfig{Tokens: []string{"t"}}); err == nil || !strings.Contains(err.Error(), "FENIX_CODEC_KEY") {
		t.Errorf("NewHTTPHandler(nil codec) error = %v, want one naming FENIX_CODEC_KEY", err)
	}
}

// countingCodec proves the SDK test environment routes payloads through
// the codec.
type countingCodec struct {
	*Codec
	encoded atomic.Int64
}

func (c *countingCodec) Encode(p []*commonpb.Payload) ([]*commonpb.Payload, error) {
	c.encoded.Add(int64(len(p)))
	return c.Codec.Encode(p)
}

func TestWorkflowWithEncryptingDataConverter(t *testing.T) {
	codec := &countingCodec{Codec: newCodec(t, newKey(t, "k1"))}
	var suite testsuite.WorkflowTestSuite
	suite.SetLogger(sdklog.NewStructuredLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	env := suite.NewTestWorkflowEnvironment()
	env.SetDataConverter(NewDataConverter(codec))
	env.RegisterWorkflow(totalWorkflow)
	env.RegisterActivity(priceOrder)

	env.ExecuteWorkflow(totalWorkflow, order{ID: "o-7", Items: []string{"a", "b", "c"}})
	if err := env.GetWorkflowError(); err != nil {
		t.Fatalf("workflow failed: %v", err)
	}
	var got order
	if err := env.GetWorkflowResult(&got); err != nil {
		t.Fatalf("GetWorkflowResult: %v", err)
	}
	if got.ID != "o-7" || got.Total != 3 {
		t.Errorf("result = %+v, want o-7 with total 3", got)
	}
	if codec.encoded.Load() == 0 {
		t.Error("the codec never encoded a payload")
	}
}

func totalWorkflow(ctx workflow.Context, in order) (order, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: time.Minute})
	err := workflow.ExecuteActivity(ctx, priceOrder, in).Get(ctx, &in)
	return in, err
}

func priceOrder(_ context.Context, in order) (order, error) {
	in.Total = float64(len(in.Items))
	return in, nil
}
