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
