package codec

import (
	"bytes"
	"encoding/json"
	"fmt"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"
)

// dataConverter is the SDK's default converter with jsonPayloadConverter
// in place of its JSON converter, in the same order.
var dataConverter = converter.NewCompositeDataConverter(
	converter.NewNilPayloadConverter(),
	converter.NewByteSlicePayloadConverter(),
	converter.NewProtoJSONPayloadConverter(),
	converter.NewProtoPayloadConverter(),
	jsonPayloadConverter{converter.NewJSONPayloadConverter()},
)

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

// FromPayload decodes as the SDK's converter does, except into a
// json.RawMessage, which takes the payload's bytes as they are. Fenix's
// workflows take their input as a json.RawMessage and parse it
// themselves, so that a malformed assignment ends as a failed result with
// InvalidAssignmentError; the SDK's converter validated the bytes first,
// and input that is not JSON, or nested deeper than encoding/json's 10,000
// levels (which a client in another language may send), failed the run
// before it started, without a result or a typed error.
func (c jsonPayloadConverter) FromPayload(payload *commonpb.Payload, valuePtr any) error {
	if raw, ok := valuePtr.(*json.RawMessage); ok {
		*raw = bytes.Clone(payload.GetData())
		return nil
	}
	return c.JSONPayloadConverter.FromPayload(payload, valuePtr)
}
