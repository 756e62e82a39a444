package prodserver

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"text/template"
)

// RenderConfig renders the server image's config template the way the
// temporalio/server image does at start (its entrypoint runs `dockerize
// -template config_template.yaml:docker.yaml` and then `temporal-server
// --env docker start`), with env standing for the container's environment.
// So a process given the same variables as docker-compose.yml's temporal
// service gets the same configuration as the container.
func RenderConfig(templatePath string, env map[string]string) ([]byte, error) {
	text, err := os.ReadFile(templatePath)
	if err != nil {
		return nil, fmt.Errorf("server config template: %w", err)
	}
	tpl, err := template.New(templatePath).Funcs(dockerizeFuncs).Parse(string(text))
	if err != nil {
		return nil, fmt.Errorf("server config template %s: %w", templatePath, err)
	}
	var out bytes.Buffer
	if err := tpl.Execute(&out, struct{ Env map[string]string }{env}); err != nil {
		return nil, fmt.Errorf("rendering %s: %w", templatePath, err)
	}
	return out.Bytes(), nil
}

// dockerizeFuncs are the template functions the config template uses, with
// dockerize's semantics: `default` falls back only when the variable is
// unset (a missing map key reaches it as nil), not when it is empty.
var dockerizeFuncs = template.FuncMap{
	"default": func(value any, fallback string) string {
		if s, ok := value.(string); ok {
			return s
		}
		return fallback
	},
	"lower": strings.ToLower,
	"split": strings.Split,
	"trim":  strings.TrimSpace,
}
