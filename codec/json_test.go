package codec

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/fenixrt/fenix/contract"
	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"
)

// HTML characters reach history as they are, in strings and inside a
// json.RawMessage alike, so a payload is as large as Fenix measured it.
func TestJSONPayloadsKeepHTMLCharacters(t *testing.T) {
	type result struct {
		Text string          `json:"text"`
		Raw  json.RawMessage `json:"raw"`
	}
	in := result{Text: "<a href='x'>&</a>", Raw: json.RawMessage(`{"html":"<b>&amp;</b>"}`)}
	for name, dc := range map[string]converter.DataConverter{"plain": NewDataConverter(nil), "encrypted": NewDataConverter(newCodec(t, newKey(t, "k1")))} {
		p, err := dc.ToPayload(in)
		if err != nil {
			t.Fatalf("%s: ToPayload: %v", name, err)
		}
		if name == "plain" {
			want := `{"text":"<a href='x'>&</a>","raw":{"html":"<b>&amp;</b>"}}`
			if got := string(p.GetData()); got != want {
				t.Errorf("payload data = %s, want %s", got, want)
			}
			if enc := string(p.GetMetadata()[MetadataEncoding]); enc != converter.MetadataEncodingJSON {
				t.Errorf("encoding = %q, want %q", enc, converter.MetadataEncodingJSON)
			}
		}
		var out result
		if err := dc.FromPayload(p, &out); err != nil {
			t.Fatalf("%s: FromPayload: %v", name, err)
		}
		if out.Text != in.Text || string(out.Raw) != string(in.Raw) {
			t.Errorf("%s: round trip = %+v, want %+v", name, out, in)
		}
	}
	// What the SDK's own converter wrote still decodes.
	old, err := converter.GetDefaultDataConverter().ToPayload(in)
	if err != nil {
		t.Fatal(err)
	}
	var out result
	if err := NewDataConverter(nil).FromPayload(old, &out); err != nil || out.Text != in.Text {
		t.Errorf("decoding the SDK converter's payload: %+v, %v", out, err)
	}
}

// A workflow's json.RawMessage input takes the payload's bytes as they
// are, also when they are not JSON or nest deeper than encoding/json
// reads: the workflow parses its input itself and ends such a run with
// InvalidAssignmentError. Other targets decode as before.
func TestRawMessageTakesThePayloadAsItIs(t *testing.T) {
	dc := NewDataConverter(nil)
	for _, data := range []string{`{"logical_work_id": `, strings.Repeat("[", 100000) + strings.Repeat("]", 100000), `{"a":1}`} {
		p := &commonpb.Payload{Metadata: map[string][]byte{converter.MetadataEncoding: []byte(converter.MetadataEncodingJSON)}, Data: []byte(data)}
		var raw json.RawMessage
		if err := dc.FromPayload(p, &raw); err != nil || string(raw) != data {
			t.Fatalf("FromPayload(%.20s…) = %.20s…, %v", data, raw, err)
		}
	}
	bad := &commonpb.Payload{Metadata: map[string][]byte{converter.MetadataEncoding: []byte(converter.MetadataEncodingJSON)}, Data: []byte(`{"a":`)}
	var m map[string]any
	if err := dc.FromPayload(bad, &m); err == nil {
		t.Fatal("a map still needs JSON")
	}
}

// Whatever its encoding, a payload reaches a json.RawMessage input: JSON
// sent as binary/plain bytes or json/protobuf text as it is, binary/null
// as nothing, and one no converter reads as contract.UnreadableInput, for
// the workflow to end the run with InvalidAssignmentError. Other targets
// still fail on an encoding nothing reads.
func TestEveryEncodingReachesARawMessageInput(t *testing.T) {
	dc := NewDataConverter(nil)
	payload := func(encoding, data string) *commonpb.Payload {
		p := &commonpb.Payload{Metadata: map[string][]byte{}, Data: []byte(data)}
		if encoding != "-" {
			p.Metadata[converter.MetadataEncoding] = []byte(encoding)
		}
		return p
	}
	for _, c := range []struct {
		encoding, data, want string
	}{
		{"binary/plain", `{"a":1}`, `{"a":1}`},
		{"json/protobuf", `{"a":1}`, `{"a":1}`},
		{"binary/null", "", ""},
		{"binary/protobuf", "\x0a\x01a", string(contract.UnreadableInput("binary/protobuf"))},
		{"binary/encrypted", "\x01\x02", string(contract.UnreadableInput("binary/encrypted"))},
		{"-", `{"a":1}`, string(contract.UnreadableInput(""))},
	} {
		var raw json.RawMessage
		if err := dc.FromPayloads(&commonpb.Payloads{Payloads: []*commonpb.Payload{payload(c.encoding, c.data)}}, &raw); err != nil || string(raw) != c.want {
			t.Errorf("%s: FromPayloads = %q, %v; want %q", c.encoding, raw, err, c.want)
		}
	}
	var m map[string]any
	if err := dc.FromPayload(payload("binary/protobuf", "\x0a\x01a"), &m); err == nil {
		t.Error("a map from binary/protobuf decoded")
	}
	var rv converter.RawValue
	if err := dc.FromPayloads(&commonpb.Payloads{Payloads: []*commonpb.Payload{payload("binary/protobuf", "x")}}, &rv); err != nil || string(rv.Payload().GetData()) != "x" {
		t.Errorf("RawValue: %v", err)
	}
}
