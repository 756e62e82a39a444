package llm_test

import (
	"context"
	"testing"

	"github.com/fenixrt/fenix/agent/llm"
	"github.com/fenixrt/fenix/contract"
)

func TestHookPromptEvaluatorPicksAModelTheProviderServes(t *testing.T) {
	for _, tc := range []struct {
		name, override, hookModel, want string
	}{
		{"no model", "", "", ""},
		{"Claude alias", "", "haiku", ""},
		{"Claude alias in capitals", "", " Sonnet ", ""},
		{"full name", "", "gpt-4o-mini", "gpt-4o-mini"},
		{"operator's choice wins", "judge-small", "claude-haiku-4-5", "judge-small"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &fakeProvider{name: "openai", answer: func(req llm.Request) (llm.Response, error) {
				return llm.Response{Message: contract.Message{Role: "assistant", Content: ` {"ok": true} `}}, nil
			}}
			got, err := llm.HookPromptEvaluator{Provider: p, Model: tc.override}.EvaluatePrompt(context.Background(), tc.hookModel, "Is it safe?")
			if err != nil || got != `{"ok": true}` {
				t.Fatalf("answer = %q, %v", got, err)
			}
			req := p.requests[0]
			if req.Model != tc.want || req.Messages[0].Content != llm.HookPromptSystem || req.Messages[1].Content != "Is it safe?" || *req.Temperature != 0 {
				t.Errorf("request = %+v, want model %q, the decision system prompt and the hook's prompt", req, tc.want)
			}
		})
	}
	empty := &fakeProvider{name: "openai", answer: func(llm.Request) (llm.Response, error) {
		return llm.Response{Message: contract.Message{Role: "assistant"}, Model: "m", Provider: "openai", FinishReason: "length"}, nil
	}}
	if _, err := (llm.HookPromptEvaluator{Provider: empty}).EvaluatePrompt(context.Background(), "", "x"); err == nil {
		t.Error("an empty answer must be an error, not a decision")
	}
}

func TestJudgeModelNamesTheModelAHookIsSentTo(t *testing.T) {
	router := &llm.Router{DefaultModel: "gpt-default"}
	for _, tc := range []struct {
		provider            llm.Provider
		override, hookModel string
		want                string
	}{
		{router, "", "", "gpt-default"},
		{router, "", "haiku", "gpt-default"},
		{router, "", "gpt-hook", "gpt-hook"},
		{router, "gpt-override", "gpt-hook", "gpt-override"},
		{nil, "", "haiku", ""},
		{(*llm.Router)(nil), "", "", ""},
	} {
		if got := llm.JudgeModel(tc.provider, tc.override, tc.hookModel); got != tc.want {
			t.Errorf("JudgeModel(%T, %q, %q) = %q, want %q", tc.provider, tc.override, tc.hookModel, got, tc.want)
		}
	}
	if got := (llm.HookPromptEvaluator{Provider: router}).JudgeModel("sonnet"); got != "gpt-default" {
		t.Errorf("HookPromptEvaluator.JudgeModel(sonnet) = %q, want the default", got)
	}
}
