package llm

import (
	"context"

	"github.com/fenixrt/fenix/fenixerr"
)

// Router picks the provider by model string: "scripted" and
// "scripted:<name>" go to Scripted, anything else to OpenAI. A nil provider
// means it is not configured; calls that need it fail with an error saying
// which environment variable to set.
type Router struct {
	// DefaultModel is used when a request names no model (FENIX_MODEL).
	DefaultModel string
	OpenAI       Provider
	Scripted     Provider
}

// Name identifies the router; responses carry the provider that answered.
func (r *Router) Name() string { return "router" }

// Complete resolves the model and delegates to its provider.
func (r *Router) Complete(ctx context.Context, req Request) (Response, error) {
	p, model, err := r.Resolve(req.Model)
	if err != nil {
		return Response{}, err
	}
	req.Model = model
	return p.Complete(ctx, req)
}

// Resolve returns the provider that serves model (after applying
// DefaultModel) and the model name to send it.
func (r *Router) Resolve(model string) (Provider, string, error) {
	if model == "" {
		model = r.DefaultModel
	}
	if model == "" {
		return nil, "", fenixerr.New(fenixerr.TypeModelProvider,
			"no model given: the assignment names none (model_context.likely_model / model_ref / api_model) and FENIX_MODEL is not set")
	}
	if IsScriptedModel(model) {
		if r.Scripted == nil {
			return nil, "", fenixerr.New(fenixerr.TypeModelProvider,
				"model %q needs a script file: set FENIX_SCRIPT_FILE to a scripted-provider JSON file", model)
		}
		return r.Scripted, model, nil
	}
	if r.OpenAI == nil {
		return nil, "", fenixerr.New(fenixerr.TypeModelProvider,
			"model %q needs an OpenAI-compatible endpoint: set FENIX_OPENAI_API_KEY (and FENIX_OPENAI_BASE_URL for vLLM/Ollama)", model)
	}
	return r.OpenAI, model, nil
}
