package codec

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/fenixrt/fenix/contract"
	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"
)

// dataConverter is the SDK's default converter with jsonPayloadConverter
// in place of its JSON converter, in the same order, and inputs read by
// inputConverter.
var dataConverter = inputConverter{converter.NewCompositeDataConverter(
	converter.NewNilPayloadConverter(),
	converter.NewByteSlicePayloadConverter(),
	converter.NewProtoJSONPayloadConverter(),
	converter.NewProtoPayloadConverter(),
	jsonPayloadConverter{converter.NewJSONPayloadConverter()},
)}

// inputConverter reads every payload into a json.RawMessage as its bytes,
// whatever its encoding. Fenix's workflows take their input as one and
// parse it themselves, so that a malformed assignment ends as a failed
// result with InvalidAssignmentError: the SDK's converter validated JSON
// first, and input that is not JSON, or nested deeper than encoding/json's
// 10,000 levels, failed the run before it started. A client in another
// language may send an assignment as binary/plain bytes or json/protobuf
// text, both read as JSON, or as binary/protobuf, with an encoding no
// converter has (a codec the worker was not given), or with no metadata at
// all; the SDK's converter failed those on every attempt of the run's
// first task, and the run never ended. The workflow is handed
// contract.UnreadableInput instead and ends with InvalidAssignmentError
// naming the encoding. Every other target decodes as the SDK's converter
// decodes it.
type inputConverter struct {
	converter.DataConverter
}

// FromPayload decodes payload into valuePtr.
func (c inputConverter) FromPayload(payload *commonpb.Payload, valuePtr any) error {
	raw, ok := valuePtr.(*json.RawMessage)
	if !ok || payload == nil {
		return c.DataConverter.FromPayload(payload, valuePtr)
	}
	switch encoding := string(payload.GetMetadata()[converter.MetadataEncoding]); encoding {
	case converter.MetadataEncodingJSON, converter.MetadataEncodingBinary, converter.MetadataEncodingProtoJSON:
		*raw = bytes.Clone(payload.GetData())
	case converter.MetadataEncodingNil:
		*raw = nil
	default:
		*raw = contract.UnreadableInput(encoding)
	}
	return nil
}

// FromPayloads decodes each payload as FromPayload does.
func (c inputConverter) FromPayloads(payloads *commonpb.Payloads, valuePtrs ...any) error {
	for i, p := range payloads.GetPayloads() {
		if i == len(valuePtrs) {
			break
		}
		if err := c.FromPayload(p, valuePtrs[i]); err != nil {
			return fmt.Errorf("payload item %d: %w", i, err)
		}
	}
	return nil
}

// jsonPayloadConverter is the SDK's JSON payload converter without HTML
// escaping. encoding/json turns each <, > and & into six bytes (\u003c),
// also inside a json.RawMessage it re-encodes. Fenix bounds tool results,
// hook output and model text by their JSON size as written, without that
// escaping; through the SDK's converter a result made of '<' would grow
// six-fold on its way to history and overflow the server's message limit,
// leaving the run's workflow task failing forever. It also keeps HTML,
// XML and shell text readable in the Web UI.
type jsonPayloadConverter struct {
	*converter.JSONPayloadConverter
}

// ToPayload encodes value as JSON with HTML characters as they are.
func (jsonPayloadConverter) ToPayload(value any) (*commonpb.Payload, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(value); err != nil {
		return nil, fmt.Errorf("%w: %v", converter.ErrUnableToEncode, err)
	}
	return &commonpb.Payload{
		Metadata: map[string][]byte{converter.MetadataEncoding: []byte(converter.MetadataEncodingJSON)},
		Data:     bytes.TrimSuffix(buf.Bytes(), []byte{'\n'}),
	}, nil
}
