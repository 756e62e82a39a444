// Command upstreamserver is an MCP server (stdio, the official Go SDK)
// offering the resources and prompts of the conformance suite's resource
// and prompt scenarios: test://static-text, test://static-binary, the
// template test://template/{id}/data, and test_simple_prompt,
// test_prompt_with_arguments, test_prompt_with_embedded_resource and
// test_prompt_with_image, with completions of the template's id and the
// prompts' arguments, and subscriptions. The conformance test puts it behind a Fenix
// worker, so the suite reads them through Fenix's gateway.
package main

import (
	"context"
	"encoding/base64"
	"fmt"
	"log"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// pixel is a 1x1 PNG.
const pixel = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="

func main() {
	s := mcp.NewServer(&mcp.Implementation{Name: "conformance-resources", Version: "1"}, &mcp.ServerOptions{CompletionHandler: complete,
		// Subscriptions are accepted (the conformance scenarios subscribe
		// and unsubscribe); nothing here changes, so no update is sent.
		SubscribeHandler:   func(context.Context, *mcp.SubscribeRequest) error { return nil },
		UnsubscribeHandler: func(context.Context, *mcp.UnsubscribeRequest) error { return nil },
	})
	s.AddResource(&mcp.Resource{URI: "test://static-text", Name: "static-text", MIMEType: "text/plain"},
		func(_ context.Context, r *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: r.Params.URI, MIMEType: "text/plain", Text: "This is the content of the static text resource."}}}, nil
		})
	png, err := base64.StdEncoding.DecodeString(pixel)
	if err != nil {
		log.Fatal(err)
	}
	s.AddResource(&mcp.Resource{URI: "test://static-binary", Name: "static-binary", MIMEType: "image/png"},
		func(_ context.Context, r *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: r.Params.URI, MIMEType: "image/png", Blob: png}}}, nil
		})
	s.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: "test://template/{id}/data", Name: "template-data", MIMEType: "application/json"},
		func(_ context.Context, r *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			id := strings.TrimSuffix(strings.TrimPrefix(r.Params.URI, "test://template/"), "/data")
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: r.Params.URI, MIMEType: "application/json",
				Text: fmt.Sprintf(`{"id":%q,"templateTest":true,"data":"Data for ID: %s"}`, id, id)}}}, nil
		})
	text := func(role mcp.Role, t string) *mcp.PromptMessage {
		return &mcp.PromptMessage{Role: role, Content: &mcp.TextContent{Text: t}}
	}
	s.AddPrompt(&mcp.Prompt{Name: "test_simple_prompt", Description: "A prompt without arguments"},
		func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{text("user", "This is a simple prompt for testing.")}}, nil
		})
	s.AddPrompt(&mcp.Prompt{Name: "test_prompt_with_arguments", Description: "A prompt with two arguments",
		Arguments: []*mcp.PromptArgument{{Name: "arg1", Description: "First test argument", Required: true}, {Name: "arg2", Description: "Second test argument", Required: true}}},
		func(_ context.Context, r *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			a := r.Params.Arguments
			return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{text("user", fmt.Sprintf("Prompt with arguments: arg1='%s', arg2='%s'", a["arg1"], a["arg2"]))}}, nil
		})
	s.AddPrompt(&mcp.Prompt{Name: "test_prompt_with_embedded_resource", Description: "A prompt embedding a resource",
		Arguments: []*mcp.PromptArgument{{Name: "resourceUri", Description: "URI of the resource to embed", Required: true}}},
		func(_ context.Context, r *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{
				{Role: "user", Content: &mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: r.Params.Arguments["resourceUri"], MIMEType: "text/plain", Text: "Embedded resource content for testing."}}},
				text("user", "Please process the embedded resource above."),
			}}, nil
		})
	s.AddPrompt(&mcp.Prompt{Name: "test_prompt_with_image", Description: "A prompt with an image"},
		func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{
				{Role: "user", Content: &mcp.ImageContent{Data: png, MIMEType: "image/png"}},
				text("user", "Please analyze the image above."),
			}}, nil
		})
	if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		log.Fatal(err)
	}
}

// complete suggests the values that start with what was typed: ids of
// the template, and words for the prompts' arguments (arg2's after
// arg1's value, when the client sends it along).
func complete(_ context.Context, r *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
	var candidates []string
	switch ref := r.Params.Ref; {
	case ref.Type == "ref/resource" && ref.URI == "test://template/{id}/data":
		candidates = []string{"1", "2", "42", "123"}
	case ref.Type == "ref/prompt" && ref.Name == "test_prompt_with_arguments":
		candidates = []string{"test", "testing", "tested", "value"}
		if first := r.Params.Context; r.Params.Argument.Name == "arg2" && first != nil && first.Arguments["arg1"] != "" {
			for i, c := range candidates {
				candidates[i] = first.Arguments["arg1"] + "-" + c
			}
		}
	default:
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("nothing to complete for %s %s%s", ref.Type, ref.Name, ref.URI)}
	}
	values := []string{}
	for _, c := range candidates {
		if strings.HasPrefix(c, r.Params.Argument.Value) {
			values = append(values, c)
		}
	}
	return &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: values, Total: len(values)}}, nil
}
