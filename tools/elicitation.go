package tools

import (
	"bytes"
	"encoding/json"
	"fmt"

	validator "github.com/santhosh-tekuri/jsonschema/v6"
)

// CheckElicitationContent checks a person's answer to an MCP server's
// form against the schema the server sent, so a wrong answer is refused
// where it is given (and can be given again) rather than by the server.
func CheckElicitationContent(server string, schema, content map[string]any) error {
	if schema == nil {
		return nil
	}
	rawSchema, err := json.Marshal(schema)
	if err != nil {
		return fmt.Errorf("the schema of MCP server %q does not encode: %v", server, err)
	}
	doc, err := validator.UnmarshalJSON(bytes.NewReader(rawSchema))
	if err != nil {
		return fmt.Errorf("the schema of MCP server %q is not JSON: %v", server, err)
	}
	c := validator.NewCompiler()
	c.UseLoader(noExternalSchemas{tool: "elicitation of " + server})
	const url = "fenix://elicitation.json"
	if err := c.AddResource(url, doc); err != nil {
		return fmt.Errorf("the schema of MCP server %q: %v", server, err)
	}
	compiled, err := c.Compile(url)
	if err != nil {
		return fmt.Errorf("the schema of MCP server %q does not compile: %v", server, err)
	}
	if content == nil {
		content = map[string]any{}
	}
	raw, err := json.Marshal(content)
	if err != nil {
		return fmt.Errorf("the answer is not JSON-encodable: %v", err)
	}
	inst, err := validator.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return fmt.Errorf("the answer is not valid JSON: %v", err)
	}
	if err := compiled.Validate(inst); err != nil {
		return fmt.Errorf("the answer does not match the form of MCP server %q: %s", server, describeSchemaError(err))
	}
	return nil
}
