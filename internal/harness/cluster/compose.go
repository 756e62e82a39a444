package cluster

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/compose-spec/compose-go/v2/cli"
	"github.com/compose-spec/compose-go/v2/types"

	"github.com/fenixrt/fenix/internal/harness/prodserver"
)

// ComposeSpec is what the cluster takes from docker-compose.yml, so the
// cluster test runs exactly the server release, configuration and scripts
// the compose stack runs: the test is the compose file's proof.
type ComposeSpec struct {
	// ServerImage is the temporal service's image; its tag must be
	// prodserver.Version.
	ServerImage string
	// ServerEnv is the temporal service's environment, with
	// DYNAMIC_CONFIG_FILE_PATH mapped to the repository file behind it.
	ServerEnv map[string]string
	// AdminToolsImage runs the schema and init jobs; its tag must start
	// with prodserver.Version.
	AdminToolsImage string
	// SchemaScript and SchemaEnv are the temporal-schema job.
	SchemaScript string
	SchemaEnv    map[string]string
	// InitScript and InitEnv are the temporal-init job (namespace and
	// search attributes).
	InitScript string
	InitEnv    map[string]string
	// TLSDir is the host directory the certs job issues the stack's
	// certificates into (internal/pki's layout); every TLS file path in
	// ServerEnv, InitEnv and WorkerTLSEnv is mapped to a host path under it.
	TLSDir string
	// WorkerTLSEnv is the workers' TEMPORAL_TLS_* environment.
	WorkerTLSEnv map[string]string
}

// Placeholders for the passwords docker-compose.yml requires: the
// cluster replaces every database setting with its own.
var composePasswords = []string{"POSTGRES_PASSWORD=cluster-unused", "FENIX_AUDIT_DB_PASSWORD=cluster-unused"}

// LoadCompose reads docker-compose.yml in repoRoot with its defaults (no
// .env, no host environment) and checks that it pins the release the
// cluster runs.
func LoadCompose(ctx context.Context, repoRoot string) (ComposeSpec, error) {
	opts, err := cli.NewProjectOptions(
		[]string{filepath.Join(repoRoot, "docker-compose.yml")},
		cli.WithWorkingDirectory(repoRoot),
		cli.WithEnv(composePasswords),
		cli.WithInterpolation(true),
		cli.WithResolvedPaths(true),
	)
	if err != nil {
		return ComposeSpec{}, fmt.Errorf("docker-compose.yml: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	project, err := opts.LoadProject(ctx)
	if err != nil {
		return ComposeSpec{}, fmt.Errorf("docker-compose.yml: %w", err)
	}
	service := func(name string) (types.ServiceConfig, error) {
		if s, ok := project.Services[name]; ok {
			return s, nil
		}
		return types.ServiceConfig{}, fmt.Errorf("docker-compose.yml has no service %q", name)
	}
	temporal, err := service("temporal")
	if err != nil {
		return ComposeSpec{}, err
	}
	schema, err := service("temporal-schema")
	if err != nil {
		return ComposeSpec{}, err
	}
	initJob, err := service("temporal-init")
	if err != nil {
		return ComposeSpec{}, err
	}
	certs, err := service("certs")
	if err != nil {
		return ComposeSpec{}, err
	}
	worker, err := service("worker")
	if err != nil {
		return ComposeSpec{}, err
	}

	spec := ComposeSpec{
		ServerImage:     temporal.Image,
		ServerEnv:       environment(temporal),
		AdminToolsImage: schema.Image,
		SchemaEnv:       environment(schema),
		InitEnv:         environment(initJob),
	}
	if tag := imageTag(spec.ServerImage); tag != prodserver.Version {
		return ComposeSpec{}, fmt.Errorf("docker-compose.yml runs %s, but the cluster test runs Temporal server %s (internal/harness/prodserver.Version): keep them equal", spec.ServerImage, prodserver.Version)
	}
	for _, s := range []types.ServiceConfig{schema, initJob} {
		if tag := imageTag(s.Image); tag != prodserver.Version && !strings.HasPrefix(tag, prodserver.Version+"-") {
			return ComposeSpec{}, fmt.Errorf("docker-compose.yml: %s runs %s, not the admin tools of server %s", s.Name, s.Image, prodserver.Version)
		}
	}
	dynamic := spec.ServerEnv["DYNAMIC_CONFIG_FILE_PATH"]
	host, ok := HostPath(temporal, dynamic)
	if !ok {
		return ComposeSpec{}, fmt.Errorf("docker-compose.yml: temporal's DYNAMIC_CONFIG_FILE_PATH %q is not a file of the repository", dynamic)
	}
	spec.ServerEnv["DYNAMIC_CONFIG_FILE_PATH"] = host
	if len(certs.Volumes) != 1 || certs.Volumes[0].Type != types.VolumeTypeBind {
		return ComposeSpec{}, fmt.Errorf("docker-compose.yml: the certs job mounts %v, not one directory of the host", certs.Volumes)
	}
	spec.TLSDir = certs.Volumes[0].Source
	spec.WorkerTLSEnv = map[string]string{}
	for k, v := range environment(worker) {
		if strings.HasPrefix(k, "TEMPORAL_TLS") {
			spec.WorkerTLSEnv[k] = v
		}
	}
	for _, mapped := range []struct {
		s   types.ServiceConfig
		env map[string]string
	}{{temporal, spec.ServerEnv}, {initJob, spec.InitEnv}, {worker, spec.WorkerTLSEnv}} {
		for k, v := range mapped.env {
			if !strings.HasPrefix(k, "TEMPORAL_TLS") || !strings.HasPrefix(v, "/") {
				continue
			}
			host, ok := HostPath(mapped.s, v)
			if !ok || !strings.HasPrefix(host, spec.TLSDir+"/") {
				return ComposeSpec{}, fmt.Errorf("docker-compose.yml: %s's %s=%s is not a file the certs job issues into %s", mapped.s.Name, k, v, spec.TLSDir)
			}
			mapped.env[k] = host
		}
	}
	if spec.SchemaScript, err = entrypointScript(schema); err != nil {
		return ComposeSpec{}, err
	}
	if spec.InitScript, err = entrypointScript(initJob); err != nil {
		return ComposeSpec{}, err
	}
	return spec, nil
}

func environment(s types.ServiceConfig) map[string]string {
	out := map[string]string{}
	for k, v := range s.Environment {
		if v != nil {
			out[k] = *v
		}
	}
	return out
}

// entrypointScript is the repository file a job's `sh <script>` entrypoint runs.
func entrypointScript(s types.ServiceConfig) (string, error) {
	if len(s.Entrypoint) < 2 {
		return "", fmt.Errorf("docker-compose.yml: %s's entrypoint %q does not run a script", s.Name, s.Entrypoint)
	}
	script := s.Entrypoint[len(s.Entrypoint)-1]
	host, ok := HostPath(s, script)
	if !ok {
		return "", fmt.Errorf("docker-compose.yml: %s runs %s, which is not mounted from the repository", s.Name, script)
	}
	return host, nil
}

// HostPath maps a path inside s's containers to the host file behind it,
// through s's bind mounts (the longest matching target wins).
func HostPath(s types.ServiceConfig, containerPath string) (string, bool) {
	best, host := "", ""
	for _, v := range s.Volumes {
		if v.Type != types.VolumeTypeBind {
			continue
		}
		if containerPath != v.Target && !strings.HasPrefix(containerPath, v.Target+"/") {
			continue
		}
		if len(v.Target) > len(best) {
			best = v.Target
			host = filepath.Join(v.Source, strings.TrimPrefix(containerPath, v.Target))
		}
	}
	return host, best != ""
}

// imageTag is the tag of an image reference ("" without one).
func imageTag(ref string) string {
	ref, _, _ = strings.Cut(ref, "@")
	slash := strings.LastIndex(ref, "/")
	if colon := strings.LastIndex(ref, ":"); colon > slash {
		return ref[colon+1:]
	}
	return ""
}
