// Package providers builds the worker's model-provider Router from the
// environment. It is separate from package llm because it depends on every
// provider, and the providers depend on llm.
package providers

import (
	"fmt"
	"strings"

	"github.com/fenixrt/fenix/agent/llm"
	"github.com/fenixrt/fenix/agent/llm/openai"
	"github.com/fenixrt/fenix/agent/llm/scripted"
)

// EnvScriptFile names the scripted provider's JSON file.
const EnvScriptFile = "FENIX_SCRIPT_FILE"

// FromEnv builds a Router: FENIX_MODEL is the default model, the
// OpenAI-compatible provider is set up when FENIX_OPENAI_API_KEY (or
// OPENAI_API_KEY) or FENIX_OPENAI_BASE_URL is set, and the scripted
// provider when FENIX_SCRIPT_FILE is. A provider left unconfigured is not
// an error here: a worker may serve only scripted models, and the Router
// explains what to set when a request needs the missing one. Invalid
// settings are errors. getenv is os.Getenv outside tests.
func FromEnv(getenv func(string) string) (*llm.Router, error) {
	router := &llm.Router{DefaultModel: strings.TrimSpace(getenv(openai.EnvModel))}

	cfg, err := openai.ConfigFromEnv(getenv)
	if err != nil {
		return nil, err
	}
	if cfg.Configured() {
		p, err := openai.New(cfg)
		if err != nil {
			return nil, err
		}
		router.OpenAI = p
	}

	if path := strings.TrimSpace(getenv(EnvScriptFile)); path != "" {
		p, err := scripted.Load(path)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", EnvScriptFile, err)
		}
		router.Scripted = p
	}
	return router, nil
}
