package composecheck

import (
	"bufio"
	"context"
	"go/parser"
	"go/token"
	"maps"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/compose-spec/compose-go/v2/cli"
	"github.com/compose-spec/compose-go/v2/types"
	enumspb "go.temporal.io/api/enums/v1"
	"gopkg.in/yaml.v3"

	"github.com/fenixrt/fenix/hooks/claudecode"
	"github.com/fenixrt/fenix/internal/harness/cluster"
	"github.com/fenixrt/fenix/internal/harness/devserver"
	"github.com/fenixrt/fenix/internal/harness/prodserver"
)

// Services `docker compose up` starts, and those behind a profile.
var (
	defaultServices = []string{"certs", "postgresql", "temporal-schema", "temporal", "temporal-init", "ui", "worker"}
	profileServices = []string{"worker-a", "worker-b", "starter"}
	// workerServices run fenix-worker; worker is the one meant for --scale.
	workerServices = []string{"worker", "worker-a", "worker-b"}
)

func repoRoot(t *testing.T) string {
	t.Helper()
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("cannot locate the test file")
	}
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", "..", ".."))
}

// load loads docker-compose.yml the way `docker compose` does: variables
// are interpolated from env (and only env, so the host's environment and a
// local .env cannot change the result), env files are resolved into the
// services' environment, relative paths are resolved against the
// repository root and the model is checked for consistency. profiles "*"
// enables every service.
func load(t *testing.T, env map[string]string, profiles ...string) *types.Project {
	t.Helper()
	withPasswords := maps.Clone(requiredPasswords)
	maps.Copy(withPasswords, env)
	project, err := loadProject(t, withPasswords, profiles...)
	if err != nil {
		t.Fatalf("docker-compose.yml does not load: %v", err)
	}
	return project
}

// requiredPasswords are the variables docker-compose.yml refuses to start
// without: every other variable has a default.
var requiredPasswords = map[string]string{"POSTGRES_PASSWORD": "pg-secret", "FENIX_AUDIT_DB_PASSWORD": "audit-secret"}

func loadProject(t *testing.T, env map[string]string, profiles ...string) (*types.Project, error) {
	t.Helper()
	root := repoRoot(t)
	var environ []string
	for k, v := range env {
		environ = append(environ, k+"="+v)
	}
	opts, err := cli.NewProjectOptions(
		[]string{filepath.Join(root, "docker-compose.yml")},
		cli.WithWorkingDirectory(root),
		cli.WithEnv(environ),
		cli.WithInterpolation(true),
		cli.WithResolvedPaths(true),
		cli.WithConsistency(true),
		cli.WithProfiles(profiles),
	)
	if err != nil {
		t.Fatalf("compose project options: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return opts.LoadProject(ctx)
}

func service(t *testing.T, p *types.Project, name string) types.ServiceConfig {
	t.Helper()
	if s, ok := p.Services[name]; ok {
		return s
	}
	if s, ok := p.DisabledServices[name]; ok {
		return s
	}
	t.Fatalf("docker-compose.yml has no service %q", name)
	return types.ServiceConfig{}
}

func env(s types.ServiceConfig, key string) (string, bool) {
	v, ok := s.Environment[key]
	if !ok || v == nil {
		return "", false
	}
	return *v, true
}

func sortedKeys[M ~map[string]V, V any](m M) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// TestComposeNeedsItsPasswords: an agent's commands share the workers'
// network, so the databases' passwords are all that keeps them out of
// the audit log and Temporal's own tables; a default written here would
// be one every agent can read.
func TestComposeNeedsItsPasswords(t *testing.T) {
	for missing := range requiredPasswords {
		env := maps.Clone(requiredPasswords)
		delete(env, missing)
		_, err := loadProject(t, env)
		if err == nil || !strings.Contains(err.Error(), "required variable "+missing+" is missing a value: set "+missing) {
			t.Errorf("without %s: err = %v, want it named as required", missing, err)
		}
	}
	p := load(t, nil, "*")
	for _, s := range p.Services {
		for k, v := range s.Environment {
			if v != nil && (strings.Contains(*v, "temporal:temporal@") || strings.Contains(*v, "fenix:fenix@")) {
				t.Errorf("%s's %s still holds a default password: %s", s.Name, k, *v)
			}
		}
	}
}

func TestComposeLoadsWithDefaults(t *testing.T) {
	p := load(t, nil)
	if p.Name != "fenix" {
		t.Errorf("project name = %q, want fenix (top-level name:)", p.Name)
	}
	if got := sortedKeys(p.Services); !slices.Equal(got, sortedCopy(defaultServices)) {
		t.Errorf("`docker compose up` starts %v, want %v", got, sortedCopy(defaultServices))
	}
	all := load(t, nil, "*")
	want := sortedCopy(append(slices.Clone(defaultServices), profileServices...))
	if got := sortedKeys(all.Services); !slices.Equal(got, want) {
		t.Errorf("services with every profile = %v, want %v", got, want)
	}
	for _, name := range profileServices {
		if len(service(t, all, name).Profiles) == 0 {
			t.Errorf("service %s has no profile, so `docker compose up` would start it", name)
		}
	}
}

func sortedCopy(s []string) []string {
	c := slices.Clone(s)
	sort.Strings(c)
	return c
}

// floatingTags never pin anything.
var floatingTags = map[string]bool{"latest": true, "stable": true, "edge": true, "main": true, "master": true, "nightly": true, "dev": true}

// imageTag returns the tag of an image reference ("" when it has none).
func imageTag(ref string) string {
	ref, _, _ = strings.Cut(ref, "@")
	slash := strings.LastIndex(ref, "/")
	colon := strings.LastIndex(ref, ":")
	if colon <= slash {
		return ""
	}
	return ref[colon+1:]
}

func TestEveryImageIsPinned(t *testing.T) {
	p := load(t, nil, "*")
	for _, name := range sortedKeys(p.Services) {
		s := p.Services[name]
		if s.Image == "" {
			if s.Build == nil {
				t.Errorf("service %s has neither image nor build", name)
			}
			continue
		}
		tag := imageTag(s.Image)
		switch {
		case tag == "" && !strings.Contains(s.Image, "@sha256:"):
			t.Errorf("service %s: image %q has no tag (that means latest); pin a version", name, s.Image)
		case floatingTags[tag]:
			t.Errorf("service %s: image %q uses the floating tag %q; pin a version", name, s.Image, tag)
		case tag != "" && !strings.ContainsAny(tag, "0123456789"):
			t.Errorf("service %s: image %q: tag %q names no version", name, s.Image, tag)
		}
	}
}

func TestWorkerBuildsFromDockerfileAndReachesTemporal(t *testing.T) {
	p := load(t, nil, "*")
	root := repoRoot(t)
	temporal := service(t, p, "temporal")
	for _, name := range append(slices.Clone(workerServices), "starter") {
		s := service(t, p, name)
		if s.Build == nil {
			t.Errorf("%s: no build section; it must build ./Dockerfile", name)
			continue
		}
		if filepath.Clean(s.Build.Context) != root {
			t.Errorf("%s: build context %q, want the repository root %q", name, s.Build.Context, root)
		}
		if s.Build.Dockerfile != "Dockerfile" {
			t.Errorf("%s: dockerfile %q, want Dockerfile", name, s.Build.Dockerfile)
		}
		addr, ok := env(s, "TEMPORAL_ADDRESS")
		if !ok {
			t.Errorf("%s: TEMPORAL_ADDRESS is not set", name)
			continue
		}
		host, port, found := strings.Cut(addr, ":")
		if !found || host != "temporal" || port != "7233" {
			t.Errorf("%s: TEMPORAL_ADDRESS=%q, want temporal:7233 (the temporal service's frontend)", name, addr)
		}
		if !slices.ContainsFunc(temporal.Ports, func(pc types.ServicePortConfig) bool { return pc.Target == 7233 }) {
			t.Errorf("temporal service does not expose 7233")
		}
		if _, ok := s.DependsOn["temporal-init"]; !ok {
			t.Errorf("%s: does not wait for temporal-init (search attributes must exist before workflows set them)", name)
		}
	}
	if _, err := os.Stat(filepath.Join(root, "Dockerfile")); err != nil {
		t.Errorf("the Dockerfile the workers build is missing: %v", err)
	}
}

func TestWorkerConfiguration(t *testing.T) {
	p := load(t, nil, "*")
	hostIDs := map[string]string{}
	dataVolumes := map[string]string{}
	for _, name := range workerServices {
		s := service(t, p, name)
		for key, want := range map[string]string{
			"FENIX_DATA_DIR":       "/var/lib/fenix",
			"FENIX_WORKSPACE_ROOT": "/workspace",
			"FENIX_LOG_FORMAT":     "json",
		} {
			if got, _ := env(s, key); got != want {
				t.Errorf("%s: %s=%q, want %q", name, key, got, want)
			}
		}

		// The HTTP listener (/metrics, /readyz, /codec/) must listen beyond
		// loopback (the worker's own default) to be published, on the port
		// that is published and probed.
		addr, _ := env(s, "FENIX_HTTP_ADDR")
		host, port, err := net.SplitHostPort(addr)
		if err != nil || (host != "" && host != "0.0.0.0" && host != "::") {
			t.Errorf("%s: FENIX_HTTP_ADDR=%q, want :PORT (all interfaces, so the port can be published)", name, addr)
		} else {
			if !slices.ContainsFunc(s.Ports, func(pc types.ServicePortConfig) bool { return strconv.Itoa(int(pc.Target)) == port }) {
				t.Errorf("%s: FENIX_HTTP_ADDR port %s is not published", name, port)
			}
			if s.HealthCheck == nil || !strings.Contains(strings.Join(s.HealthCheck.Test, " "), "/"+port+" ") {
				t.Errorf("%s: the healthcheck does not probe port %s", name, port)
			}
		}

		dsn, _ := env(s, "FENIX_AUDIT_DSN")
		u, err := url.Parse(dsn)
		if err != nil || u.Scheme != "postgres" || u.Hostname() != "postgresql" || u.Path != "/fenix_audit" {
			t.Errorf("%s: FENIX_AUDIT_DSN=%q, want postgres://...@postgresql:5432/fenix_audit", name, dsn)
		}
		if _, ok := s.DependsOn["postgresql"]; !ok {
			t.Errorf("%s: audit log is in PostgreSQL but the service does not depend on postgresql", name)
		}

		// The hooks file must be mounted from deploy/ and load with Fenix's
		// own loader.
		hooksFile, _ := env(s, "FENIX_HOOKS_FILE")
		host, ok := cluster.HostPath(s, hooksFile)
		if !ok {
			t.Errorf("%s: FENIX_HOOKS_FILE=%q is not inside a bind mount", name, hooksFile)
		} else if loaded, err := claudecode.LoadCommandHooks(host); err != nil {
			t.Errorf("%s: the example hooks file does not load: %v", name, err)
		} else if len(loaded) == 0 {
			t.Errorf("%s: the example hooks file %s defines no hooks", name, host)
		}

		if s.ContainerName != "" {
			t.Errorf("%s: container_name is set, which breaks --scale", name)
		}
		if !hasHealthcheck(s) {
			t.Errorf("%s: no healthcheck", name)
		}

		// The context store is PostgreSQL, so a context_ref written by one
		// worker is readable by the others without a shared volume.
		if store, _ := env(s, "FENIX_CONTEXT_STORE"); store != dsn {
			t.Errorf("%s: FENIX_CONTEXT_STORE=%q, want the audit database %q (the shared PostgreSQL context store)", name, store, dsn)
		}

		// Every worker has its own data directory (host ID, host-local
		// state); they share the skills and the workspace.
		var data *types.ServiceVolumeConfig
		shared := map[string]string{}
		for i, v := range s.Volumes {
			switch v.Target {
			case "/var/lib/fenix":
				data = &s.Volumes[i]
			case "/var/lib/fenix/contexts":
				t.Errorf("%s: mounts a context volume; the context store is in PostgreSQL", name)
			case "/var/lib/fenix/skills", "/workspace":
				if v.Type != types.VolumeTypeVolume || v.Source == "" {
					t.Errorf("%s: %s must be a shared named volume, got %s %q", name, v.Target, v.Type, v.Source)
				}
				shared[v.Target] = v.Source
			}
		}
		if len(shared) != 2 {
			t.Errorf("%s: shared volumes %v, want skills and workspace", name, shared)
		}
		if data == nil {
			t.Errorf("%s: no volume at /var/lib/fenix (FENIX_DATA_DIR)", name)
			continue
		}
		id, hasID := env(s, "FENIX_HOST_ID")
		if name == "worker" {
			// The scaled service: one definition for every replica, so
			// anything fixed here would be shared by all of them.
			if data.Source != "" {
				t.Errorf("worker: data volume %q is shared by every --scale replica; it must be anonymous (one per replica)", data.Source)
			}
			if hasID {
				t.Errorf("worker: FENIX_HOST_ID=%q would give every --scale replica the same host queue", id)
			}
			continue
		}
		if data.Source == "" || !hasID || id == "" {
			t.Errorf("%s: a pinned worker needs a named data volume and FENIX_HOST_ID (got volume %q, host ID %q)", name, data.Source, id)
			continue
		}
		if other, dup := hostIDs[id]; dup {
			t.Errorf("%s and %s share FENIX_HOST_ID %q", name, other, id)
		}
		if other, dup := dataVolumes[data.Source]; dup {
			t.Errorf("%s and %s share the data volume %q", name, other, data.Source)
		}
		hostIDs[id] = name
		dataVolumes[data.Source] = name
	}
}

func hasHealthcheck(s types.ServiceConfig) bool {
	return s.HealthCheck != nil && !s.HealthCheck.Disable && len(s.HealthCheck.Test) > 0
}

// TestVariablesReachEveryService overrides the stack's variables and checks
// each one arrives, consistently, wherever it is used.
func TestVariablesReachEveryService(t *testing.T) {
	p := load(t, map[string]string{
		"POSTGRES_PASSWORD":       "pg-secret",
		"FENIX_AUDIT_DB_PASSWORD": "audit-secret",
		"TEMPORAL_NAMESPACE":      "fenix-prod",
		"FENIX_TASK_QUEUE":        "fenix-q",
	}, "*")
	check := func(svc, key, want string) {
		t.Helper()
		if got, _ := env(service(t, p, svc), key); got != want {
			t.Errorf("%s: %s=%q, want %q", svc, key, got, want)
		}
	}
	check("postgresql", "POSTGRES_PASSWORD", "pg-secret")
	check("temporal-schema", "SQL_PASSWORD", "pg-secret")
	check("temporal", "POSTGRES_PWD", "pg-secret")
	check("postgresql", "FENIX_AUDIT_DB_PASSWORD", "audit-secret")
	check("temporal-init", "TEMPORAL_NAMESPACE", "fenix-prod")
	check("ui", "TEMPORAL_DEFAULT_NAMESPACE", "fenix-prod")
	for _, name := range append(slices.Clone(workerServices), "starter") {
		check(name, "TEMPORAL_NAMESPACE", "fenix-prod")
		check(name, "FENIX_TASK_QUEUE", "fenix-q")
	}
	for _, name := range workerServices {
		dsn, _ := env(service(t, p, name), "FENIX_AUDIT_DSN")
		u, err := url.Parse(dsn)
		if err != nil {
			t.Fatalf("%s: FENIX_AUDIT_DSN: %v", name, err)
		}
		pw, _ := u.User.Password()
		user, _ := env(service(t, p, "postgresql"), "FENIX_AUDIT_DB_USER")
		db, _ := env(service(t, p, "postgresql"), "FENIX_AUDIT_DB")
		if pw != "audit-secret" || u.User.Username() != user || strings.TrimPrefix(u.Path, "/") != db {
			t.Errorf("%s: FENIX_AUDIT_DSN %q does not match the role and database the postgresql init script creates (%s/%s)", name, dsn, user, db)
		}
	}
}

// indexedValueTypes maps the CLI's --type names to Temporal's enum.
var indexedValueTypes = map[string]enumspb.IndexedValueType{
	"Text":        enumspb.INDEXED_VALUE_TYPE_TEXT,
	"Keyword":     enumspb.INDEXED_VALUE_TYPE_KEYWORD,
	"Int":         enumspb.INDEXED_VALUE_TYPE_INT,
	"Double":      enumspb.INDEXED_VALUE_TYPE_DOUBLE,
	"Bool":        enumspb.INDEXED_VALUE_TYPE_BOOL,
	"Datetime":    enumspb.INDEXED_VALUE_TYPE_DATETIME,
	"KeywordList": enumspb.INDEXED_VALUE_TYPE_KEYWORD_LIST,
}

// TestSearchAttributeJobMatchesCode checks that the init job registers
// exactly the search attributes the code uses (internal/harness/devserver), with
// their types, and that its script uses the list.
func TestSearchAttributeJobMatchesCode(t *testing.T) {
	p := load(t, nil)
	job := service(t, p, "temporal-init")
	list, ok := env(job, "FENIX_SEARCH_ATTRIBUTES")
	if !ok {
		t.Fatal("temporal-init: FENIX_SEARCH_ATTRIBUTES is not set")
	}
	got := map[string]enumspb.IndexedValueType{}
	for _, spec := range strings.Fields(list) {
		name, typ, found := strings.Cut(spec, "=")
		vt, known := indexedValueTypes[typ]
		if !found || name == "" || !known {
			t.Errorf("temporal-init: bad FENIX_SEARCH_ATTRIBUTES entry %q (want NAME=TYPE with a Temporal type)", spec)
			continue
		}
		got[name] = vt
	}
	want := map[string]enumspb.IndexedValueType{}
	for key := range devserver.SearchAttributes().GetUntypedValues() {
		want[key.GetName()] = key.GetValueType()
	}
	if len(want) != 5 {
		t.Errorf("devserver declares %d search attributes, this test expects ConversationId, TurnId, ToolName, AssignmentStatus, AwaitingDecision", len(want))
	}
	for name, vt := range want {
		if got[name] != vt {
			t.Errorf("temporal-init registers %s as %v, the code uses %v", name, got[name], vt)
		}
	}
	for name := range got {
		if _, ok := want[name]; !ok {
			t.Errorf("temporal-init registers %s, which the code does not use", name)
		}
	}

	if len(job.Entrypoint) < 2 {
		t.Fatalf("temporal-init: entrypoint %q does not run a script", job.Entrypoint)
	}
	script, ok := cluster.HostPath(job, job.Entrypoint[len(job.Entrypoint)-1])
	if !ok {
		t.Fatalf("temporal-init: script %q is not mounted from the repository", job.Entrypoint[len(job.Entrypoint)-1])
	}
	body, err := os.ReadFile(script)
	if err != nil {
		t.Fatal(err)
	}
	for _, needle := range []string{"FENIX_SEARCH_ATTRIBUTES", "temporal operator search-attribute create", "temporal operator cluster health", "retry"} {
		if !strings.Contains(string(body), needle) {
			t.Errorf("%s does not contain %q", script, needle)
		}
	}
	if addr, _ := env(job, "TEMPORAL_ADDRESS"); addr != "temporal:7233" {
		t.Errorf("temporal-init: TEMPORAL_ADDRESS=%q, want temporal:7233", addr)
	}
}

var dependsOnConditions = map[string]bool{
	types.ServiceConditionStarted:               true,
	types.ServiceConditionHealthy:               true,
	types.ServiceConditionCompletedSuccessfully: true,
}

func TestDependsOn(t *testing.T) {
	p := load(t, nil, "*")
	for _, name := range sortedKeys(p.Services) {
		s := p.Services[name]
		for _, dep := range sortedKeys(s.DependsOn) {
			d := s.DependsOn[dep]
			target, ok := p.Services[dep]
			if !ok {
				t.Errorf("%s depends on %s, which does not exist", name, dep)
				continue
			}
			if !dependsOnConditions[d.Condition] {
				t.Errorf("%s depends on %s with condition %q", name, dep, d.Condition)
			}
			if d.Condition == types.ServiceConditionHealthy && !hasHealthcheck(target) {
				t.Errorf("%s waits for %s to be healthy, but %s has no healthcheck", name, dep, dep)
			}
			if d.Condition == types.ServiceConditionCompletedSuccessfully && target.Restart != "" && target.Restart != types.RestartPolicyNo {
				t.Errorf("%s waits for %s to complete, but %s has restart %q", name, dep, dep, target.Restart)
			}
			if len(target.Profiles) > 0 && len(s.Profiles) == 0 {
				t.Errorf("%s (always started) depends on %s, which is behind profile %v", name, dep, target.Profiles)
			}
		}
	}
	for _, name := range []string{"postgresql", "temporal"} {
		if !hasHealthcheck(service(t, p, name)) {
			t.Errorf("%s has no healthcheck", name)
		}
	}
}

// deployRef finds ./deploy/... paths in the compose file.
var deployRef = regexp.MustCompile(`\./deploy/[^\s:"'\]]+`)

func TestReferencedFilesExist(t *testing.T) {
	root := repoRoot(t)
	p := load(t, nil, "*")
	optional := map[string]bool{}
	for _, name := range sortedKeys(p.Services) {
		s := p.Services[name]
		for _, v := range s.Volumes {
			if v.Type != types.VolumeTypeBind {
				continue
			}
			if generated := filepath.Join(root, tlsDir); v.Source == generated || strings.HasPrefix(v.Source, generated+"/") {
				continue // the certs job's output, checked by TestEveryPartyHoldsOnlyItsOwnKey
			}
			if _, err := os.Stat(v.Source); err != nil {
				t.Errorf("%s mounts %s from %s, which does not exist", name, v.Target, v.Source)
			}
			if !v.ReadOnly {
				t.Errorf("%s mounts %s read-write; repository files are mounted read-only", name, v.Source)
			}
		}
		for _, f := range s.EnvFiles {
			if !bool(f.Required) {
				optional[filepath.Clean(f.Path)] = true
				continue
			}
			if _, err := os.Stat(f.Path); err != nil {
				t.Errorf("%s: env_file %s does not exist", name, f.Path)
			}
		}
	}
	raw, err := os.ReadFile(filepath.Join(root, "docker-compose.yml"))
	if err != nil {
		t.Fatal(err)
	}
	refs := deployRef.FindAllString(string(raw), -1)
	if len(refs) == 0 {
		t.Fatal("docker-compose.yml references nothing under ./deploy; has the layout changed?")
	}
	for _, ref := range refs {
		if strings.HasPrefix(ref, "./"+tlsDir) {
			continue
		}
		path := filepath.Join(root, ref)
		if optional[path] {
			// An optional env_file; its template must exist instead.
			path += ".example"
		}
		if _, err := os.Stat(path); err != nil {
			t.Errorf("docker-compose.yml references %s: %v", ref, err)
		}
	}
}

// TestTemporalDynamicConfig parses the dynamic config the server is given
// in the shape the server expects: key -> list of {value, constraints}.
func TestTemporalDynamicConfig(t *testing.T) {
	p := load(t, nil)
	s := service(t, p, "temporal")
	path, _ := env(s, "DYNAMIC_CONFIG_FILE_PATH")
	host, ok := cluster.HostPath(s, path)
	if !ok {
		t.Fatalf("temporal: DYNAMIC_CONFIG_FILE_PATH=%q is not inside a bind mount", path)
	}
	body, err := os.ReadFile(host)
	if err != nil {
		t.Fatal(err)
	}
	var cfg map[string][]struct {
		Value       any            `yaml:"value"`
		Constraints map[string]any `yaml:"constraints"`
	}
	dec := yaml.NewDecoder(strings.NewReader(string(body)))
	dec.KnownFields(true)
	if err := dec.Decode(&cfg); err != nil {
		t.Fatalf("%s: %v", host, err)
	}
	if len(cfg) == 0 {
		t.Fatalf("%s sets nothing", host)
	}
	for key, entries := range cfg {
		if len(entries) == 0 {
			t.Errorf("%s: %s has no values", host, key)
		}
		for _, e := range entries {
			if e.Value == nil {
				t.Errorf("%s: %s has an entry without a value", host, key)
			}
		}
	}
	if v, _ := env(s, "DB"); v != "postgres12" && v != "postgres12_pgx" {
		t.Errorf("temporal: DB=%q, want postgres12 (the SQL plugin for PostgreSQL 12+)", v)
	}
	if v, _ := env(s, "POSTGRES_SEEDS"); v != "postgresql" {
		t.Errorf("temporal: POSTGRES_SEEDS=%q, want the postgresql service", v)
	}
	if v, _ := env(s, "BIND_ON_IP"); v != "0.0.0.0" {
		t.Errorf("temporal: BIND_ON_IP=%q; the frontend must listen beyond loopback for the other containers", v)
	}
}

// TestScriptsParse runs `sh -n` on the shell scripts the stack runs.
func TestScriptsParse(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh on PATH")
	}
	scripts, err := filepath.Glob(filepath.Join(repoRoot(t), "deploy", "*", "*.sh"))
	if err != nil {
		t.Fatal(err)
	}
	more, _ := filepath.Glob(filepath.Join(repoRoot(t), "deploy", "*", "*", "*.sh"))
	scripts = append(scripts, more...)
	if len(scripts) == 0 {
		t.Fatal("no scripts under deploy/")
	}
	for _, script := range scripts {
		if out, err := exec.Command(sh, "-n", script).CombinedOutput(); err != nil {
			t.Errorf("sh -n %s: %v\n%s", script, err, out)
		}
	}
}

// dockerfile is the parsed subset of the Dockerfile the checks need.
type dockerfile struct {
	froms      []string // image references, ARGs substituted
	buildPkgs  []string // ./pkg arguments of `go build`
	lastUser   string
	volumes    []string
	entrypoint string
	text       string
}

var (
	argRef     = regexp.MustCompile(`\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?`)
	goBuildPkg = regexp.MustCompile(`go build\b[^&;|]*?\s(\./[A-Za-z0-9_./-]+)`)
)

func parseDockerfile(t *testing.T, path string) dockerfile {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var lines []string
	var cur strings.Builder
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "#") || (line == "" && cur.Len() == 0) {
			continue
		}
		if strings.HasSuffix(line, "\\") {
			cur.WriteString(strings.TrimSuffix(line, "\\") + " ")
			continue
		}
		cur.WriteString(line)
		lines = append(lines, cur.String())
		cur.Reset()
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	d := dockerfile{}
	args := map[string]string{}
	for _, line := range lines {
		d.text += line + "\n"
		instr, rest, _ := strings.Cut(line, " ")
		rest = strings.TrimSpace(rest)
		switch strings.ToUpper(instr) {
		case "ARG":
			name, def, _ := strings.Cut(rest, "=")
			args[name] = strings.Trim(def, `"`)
		case "FROM":
			fields := strings.Fields(rest)
			for len(fields) > 0 && strings.HasPrefix(fields[0], "--") {
				fields = fields[1:]
			}
			if len(fields) == 0 {
				t.Fatalf("Dockerfile: bad FROM %q", line)
			}
			image := argRef.ReplaceAllStringFunc(fields[0], func(m string) string {
				return args[argRef.FindStringSubmatch(m)[1]]
			})
			d.froms = append(d.froms, image)
		case "RUN":
			for _, m := range goBuildPkg.FindAllStringSubmatch(rest, -1) {
				d.buildPkgs = append(d.buildPkgs, m[1])
			}
		case "USER":
			d.lastUser = rest
		case "VOLUME":
			d.volumes = append(d.volumes, strings.FieldsFunc(rest, func(r rune) bool { return strings.ContainsRune(`[]", `, r) })...)
		case "ENTRYPOINT":
			d.entrypoint = rest
		}
	}
	return d
}

func TestDockerfile(t *testing.T) {
	root := repoRoot(t)
	d := parseDockerfile(t, filepath.Join(root, "Dockerfile"))

	if len(d.froms) < 2 {
		t.Errorf("Dockerfile has %d stages, want a build stage and a runtime stage", len(d.froms))
	}
	stages := map[string]bool{}
	for _, line := range strings.Split(d.text, "\n") {
		if f := strings.Fields(line); len(f) >= 4 && strings.EqualFold(f[0], "FROM") && strings.EqualFold(f[len(f)-2], "AS") {
			stages[f[len(f)-1]] = true
		}
	}
	for _, image := range d.froms {
		if stages[image] {
			continue
		}
		if tag := imageTag(image); tag == "" || floatingTags[tag] {
			t.Errorf("Dockerfile: base image %q is not pinned to a tag", image)
		}
	}

	// Both binaries are built, from main packages that exist.
	for _, want := range []string{"./worker", "./starter"} {
		if !slices.Contains(d.buildPkgs, want) {
			t.Errorf("Dockerfile does not `go build` %s (builds %v)", want, d.buildPkgs)
		}
	}
	fset := token.NewFileSet()
	for _, pkg := range d.buildPkgs {
		dir := filepath.Join(root, filepath.FromSlash(pkg))
		files, _ := filepath.Glob(filepath.Join(dir, "*.go"))
		mains := 0
		for _, file := range files {
			if strings.HasSuffix(file, "_test.go") {
				continue
			}
			af, err := parser.ParseFile(fset, file, nil, parser.PackageClauseOnly)
			if err != nil {
				t.Errorf("%s: %v", file, err)
				continue
			}
			if af.Name.Name != "main" {
				t.Errorf("%s is package %s; the Dockerfile builds %s as a command", file, af.Name.Name, pkg)
			}
			mains++
		}
		if mains == 0 {
			t.Errorf("Dockerfile builds %s, which has no Go files", pkg)
		}
	}

	if !strings.Contains(d.text, "CGO_ENABLED=0") {
		t.Error("Dockerfile does not build with CGO_ENABLED=0")
	}
	if u := strings.Split(d.lastUser, ":")[0]; u == "" || u == "0" || u == "root" {
		t.Errorf("Dockerfile runs as %q; the runtime user must not be root", d.lastUser)
	}
	if !strings.Contains(d.entrypoint, "fenix-worker") {
		t.Errorf("Dockerfile ENTRYPOINT %s, want fenix-worker", d.entrypoint)
	}
	for _, v := range []string{"/var/lib/fenix", "/workspace"} {
		if !slices.Contains(d.volumes, v) {
			t.Errorf("Dockerfile does not declare VOLUME %s (has %v)", v, d.volumes)
		}
	}

	// The compose file's paths are the image's.
	p := load(t, nil)
	worker := service(t, p, "worker")
	for _, key := range []string{"FENIX_DATA_DIR", "FENIX_WORKSPACE_ROOT"} {
		if v, _ := env(worker, key); !slices.Contains(d.volumes, v) {
			t.Errorf("worker: %s=%q is not a VOLUME of the image %v", key, v, d.volumes)
		}
	}
}

// TestComposeRunsWhatTheClusterTestRuns: the server release, its dynamic
// config and the schema and init scripts of the stack are the ones
// internal/harness/cluster runs (it loads them from this file), so the cluster test
// is this file's proof even where it cannot run.
func TestComposeRunsWhatTheClusterTestRuns(t *testing.T) {
	spec, err := cluster.LoadCompose(context.Background(), repoRoot(t))
	if err != nil {
		t.Fatal(err)
	}
	if want := "temporalio/server:" + prodserver.Version; spec.ServerImage != want {
		t.Errorf("temporal image %q, want %q", spec.ServerImage, want)
	}
	body, err := os.ReadFile(spec.ServerEnv["DYNAMIC_CONFIG_FILE_PATH"])
	if err != nil {
		t.Fatal(err)
	}
	var cfg map[string][]struct {
		Value any `yaml:"value"`
	}
	if err := yaml.Unmarshal(body, &cfg); err != nil {
		t.Fatal(err)
	}
	// The settings the fast path depends on, as the dev servers in tests
	// run them (internal/harness/devserver.DynamicConfig).
	if v := cfg["system.enableActivityEagerExecution"]; len(v) != 1 || v[0].Value != true {
		t.Errorf("system.enableActivityEagerExecution = %v, want true", v)
	}
	if v := cfg["history.transferProcessorMaxPollRPS"]; len(v) != 1 || v[0].Value.(int) <= 20 {
		t.Errorf("history.transferProcessorMaxPollRPS = %v, want it raised above the default 20", v)
	}
}
