package openai

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"github.com/fenixrt/fenix/agent/llm"
	"github.com/fenixrt/fenix/contract"
)

// blobs is a context store in memory.
type blobs map[string][]byte

func (b blobs) Get(_ context.Context, ref string) ([]byte, error) {
	if data, ok := b[ref]; ok {
		return data, nil
	}
	return nil, errors.New("no such blob")
}

// A step's tool messages are followed by one user message showing the
// images they returned, each after a line naming its call; an image the
// store no longer has, or of a type vision endpoints refuse, is left out
// (its tool message still names it).
func TestToolImagesFollowTheStepsToolMessages(t *testing.T) {
	s := newChatServer(t, answer(plainAnswer))
	p := newTestProvider(t, s)
	png, svg := []byte("\x89PNG fake"), []byte("<svg/>")
	req := llm.Request{
		Messages: []contract.Message{
			{Role: "user", Content: "Look at the page."},
			{Role: "assistant", ToolCalls: []contract.ToolCall{{CallID: "c1", ToolName: "browser_screenshot"}, {CallID: "c2", ToolName: "mcp__pics__draw"}}},
			{Role: "tool", ToolCallID: "c1", Name: "browser_screenshot", Content: "[image image/png, 9 bytes]",
				Images: []contract.ImageRef{{Ref: "ctx:png", MIMEType: "image/png", Bytes: len(png)}}},
			{Role: "tool", ToolCallID: "c2", Name: "mcp__pics__draw", Content: "two images",
				Images: []contract.ImageRef{{Ref: "ctx:svg", MIMEType: "image/svg+xml"}, {Ref: "ctx:gone", MIMEType: "image/png"}}},
			{Role: "user", Content: "What do you see?"},
		},
		Blobs: blobs{"ctx:png": png, "ctx:svg": svg},
	}
	if _, err := p.Complete(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	messages := s.lastBody(t)["messages"].([]any)
	roles := []string{}
	for _, m := range messages {
		roles = append(roles, m.(map[string]any)["role"].(string))
	}
	if want := []string{"user", "assistant", "tool", "tool", "user", "user"}; !reflect.DeepEqual(roles, want) {
		t.Fatalf("roles = %v, want %v", roles, want)
	}
	shown, _ := json.Marshal(messages[4].(map[string]any)["content"])
	want, _ := json.Marshal([]any{
		map[string]any{"type": "text", "text": "Image 1 of 1 returned by tool browser_screenshot (call c1):"},
		map[string]any{"type": "image_url", "image_url": map[string]any{"url": "data:image/png;base64," + base64.StdEncoding.EncodeToString(png)}},
	})
	if string(shown) != string(want) {
		t.Fatalf("the images shown = %s, want %s", shown, want)
	}

	// Without a store, or with images off, the model reads the lines.
	req.Blobs = nil
	if _, err := p.Complete(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	if n := len(s.lastBody(t)["messages"].([]any)); n != 5 {
		t.Fatalf("%d messages without a store, want 5", n)
	}
	req.Blobs = blobs{"ctx:png": png}
	off := newTestProvider(t, s, func(c *Config) { c.NoImages = true })
	if _, err := off.Complete(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	if n := len(s.lastBody(t)["messages"].([]any)); n != 5 {
		t.Fatalf("%d messages with images off, want 5", n)
	}
}

// The newest images are shown, at most MaxModelImages of them.
func TestTheNewestImagesAreShown(t *testing.T) {
	store := blobs{}
	var messages []contract.Message
	for i := range MaxModelImages + 3 {
		ref := string(rune('a' + i))
		store[ref] = []byte{byte(i)}
		messages = append(messages, contract.Message{Role: "tool", ToolCallID: ref, Images: []contract.ImageRef{{Ref: ref, MIMEType: "image/png", Bytes: 1}}})
	}
	shown := shownImages(context.Background(), llm.Request{Messages: messages, Blobs: store})
	if len(shown) != MaxModelImages {
		t.Fatalf("%d images shown, want %d", len(shown), MaxModelImages)
	}
	for _, old := range []string{"a", "b", "c"} {
		if _, ok := shown[old]; ok {
			t.Fatalf("image %s, among the oldest, is shown", old)
		}
	}
}

// A user message's own images (a kernel's user gave them) are shown in
// it, after its text.
func TestAUserMessagesImagesAreShownInIt(t *testing.T) {
	s := newChatServer(t, answer(plainAnswer))
	p := newTestProvider(t, s)
	jpeg := []byte("\xff\xd8\xff fake")
	req := llm.Request{
		Messages: []contract.Message{{Role: "user", Content: "What is on this receipt?",
			Images: []contract.ImageRef{{Ref: "ctx:jpeg", MIMEType: "image/jpeg", Bytes: len(jpeg)}}}},
		Blobs: blobs{"ctx:jpeg": jpeg},
	}
	if _, err := p.Complete(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	messages := s.lastBody(t)["messages"].([]any)
	if len(messages) != 1 {
		t.Fatalf("messages = %v, want the one user message", messages)
	}
	got, _ := json.Marshal(messages[0])
	want, _ := json.Marshal(map[string]any{"role": "user", "content": []any{
		map[string]any{"type": "text", "text": "What is on this receipt?"},
		map[string]any{"type": "image_url", "image_url": map[string]any{"url": "data:image/jpeg;base64," + base64.StdEncoding.EncodeToString(jpeg)}},
	}})
	if string(got) != string(want) {
		t.Fatalf("the user message = %s, want %s", got, want)
	}
}
