package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/invopop/jsonschema"
	validator "github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"

	"github.com/fenixrt/fenix/contract"
	"github.com/fenixrt/fenix/fenixerr"
	"github.com/fenixrt/fenix/netguard"
	"github.com/fenixrt/fenix/workspace"
)

// DefaultMaxArgumentBytes caps the JSON size of one call's arguments.
const DefaultMaxArgumentBytes = 256 << 10

// Env is what an executor may use. The activity builds one per call.
type Env struct {
	CallID         string
	ConversationID string
	TurnID         string
	AgentProfile   string
	// RunID is the workflow ID of the run making the call; browser
	// sessions remember the run that opened them.
	RunID string
	// Blobs, when set, stores content too large for a result (a
	// screenshot) and returns its reference.
	Blobs BlobStore
	// Workspace is the confined workspace root, nil when none is configured.
	Workspace *workspace.Workspace
	// Progress streams output chunks (heartbeats and progress reports).
	// Never nil inside an executor.
	Progress func(contract.ToolOutputChunk)
	// Heartbeat, when set, is called every few seconds by long tools even
	// while they produce no output, so a heartbeat timeout only fires when
	// the worker is gone.
	Heartbeat func()
	// ReportResource, when set, is called with the ID of the host resource
	// a call creates (exec_command's command_run_id, process_exec's
	// process_run_id) as soon as it exists, before the call returns, so a
	// call lost with its worker can still name it.
	ReportResource func(id string)
	Logger         *slog.Logger
	// Host holds host-local resources (command runs, processes) and
	// service configuration; tools that need it check for nil.
	Host *Host
	// ContactLost, when set, tells a tool whose context ended whether that
	// was because this worker lost contact with Temporal (its heartbeats
	// were refused or could not be delivered, so the call's result can no
	// longer be recorded) rather than a requested cancellation.
	ContactLost func() bool
	// AskNetwork, when set, is asked about a host a network-sandboxed
	// command's policy does not list (the call's run parks a permission
	// until decide_permission); nil refuses such hosts.
	AskNetwork netguard.Asker
	// Elicit, when set, puts an MCP server's question asked during the
	// call (MCP elicitation) to the call's run: its hooks, then a person
	// through its inbox. Nil: the server's question is cancelled.
	Elicit Elicitor
	// SessionEnv is the session's $CLAUDE_ENV_FILE lines, which
	// exec_command and process_exec run in the command's shell before the
	// command (hooks.JoinSessionEnv).
	SessionEnv string
	// Hidden, when set, reports whether a permission rule hides a
	// workspace path (relative to the root) from reading: tools that
	// list or search the workspace skip it, so a file a Read deny rule
	// keeps from workspace_read does not surface through them.
	Hidden func(rel string) bool
}

// Elicitor answers an MCP server's question asked during a call.
type Elicitor func(ctx context.Context, q Elicitation) (ElicitationAnswer, error)

// Elicitation is an MCP server's question ("elicitation/create"): a form
// whose fields RequestedSchema describes, or a URL to visit.
type Elicitation struct {
	ServerName      string
	ToolName        string
	Message         string
	Mode            string
	RequestedSchema map[string]any
	URL             string
	ElicitationID   string
}

// ElicitationAnswer is the answer that goes back to the server: Action
// is "accept" (with the form's Content), "decline" or "cancel".
type ElicitationAnswer struct {
	Action  string
	Content map[string]any
}

// BlobStore is the part of the context store tools write to.
type BlobStore interface {
	Put(ctx context.Context, data []byte) (string, error)
}

func (e *Env) contactLost() bool { return e.ContactLost != nil && e.ContactLost() }

func (e *Env) hidden(rel string) bool { return e.Hidden != nil && e.Hidden(rel) }

func (e *Env) progress(c contract.ToolOutputChunk) {
	if e.Progress != nil {
		e.Progress(c)
	}
}

func (e *Env) reportResource(id string) {
	if e.ReportResource != nil {
		e.ReportResource(id)
	}
}

func (e *Env) heartbeat() {
	if e.Heartbeat != nil {
		e.Heartbeat()
	}
}

// Spec describes a tool for Define.
type Spec struct {
	Name           string
	Description    string
	RegistryBacked bool
	// Idempotent tools may be retried after an infrastructure failure;
	// others run at most once.
	Idempotent bool
	// Local tools are short, idempotent, free of side effects and bound
	// to no host: the workflow may run them as a local activity (no round
	// trip to the server; re-run at most once more if the worker dies
	// mid-call). Everything that writes, runs commands or holds host
	// state must stay a regular activity, which never re-runs.
	Local bool
	// ReadOnly tools change nothing: not the workspace, the host, the
	// agent's memory, a browser page or anything beyond the worker. Plan
	// mode (a Claude Code permissions.defaultMode) runs only these.
	ReadOnly       bool
	NeedsWorkspace bool
	// WatchesWorkspace tools may write in the workspace by means of their
	// own (an MCP server's): they get the call's workspace when it has
	// one, and report what they changed among its protected paths.
	WatchesWorkspace bool
	Timeout          time.Duration
	Heartbeat        time.Duration
	MaxArgBytes      int
	// Owner returns the resource a call refers to, for host routing.
	Owner func(args map[string]any) string
	// Declared is what the tool's source declared of it beyond what Fenix
	// needs to run it (see Declared); nil for Fenix's own tools.
	Declared *Declared
}

// Define builds a Definition from typed functions. The argument schema is
// generated from A's struct tags (`json`, `jsonschema`) and enforced before
// the arguments are decoded strictly (unknown fields are refused) into A.
func Define[A any, R any](spec Spec, execute func(ctx context.Context, env *Env, args A) (R, error), project func(args A, result R) Projection) Definition {
	spec.applyDefaults()
	schemaJSON, compiled := compileSchema[A](spec.Name)

	decode := func(args map[string]any) (A, error) {
		var a A
		raw, err := checkArguments(spec.Name, spec.MaxArgBytes, compiled, args)
		if err != nil {
			return a, err
		}
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&a); err != nil {
			return a, fenixerr.Validation("arguments of tool %q are invalid: %v (got %s)", spec.Name, err, describeArgs(args)).WithTool(spec.Name)
		}
		return a, nil
	}

	return Definition{
		Descriptor: spec.descriptor(schemaJSON),
		validate: func(args map[string]any) error {
			_, err := decode(args)
			return err
		},
		execute: func(ctx context.Context, env *Env, args map[string]any) (json.RawMessage, error) {
			a, err := decode(args)
			if err != nil {
				return nil, err
			}
			res, err := execute(ctx, env, a)
			if err != nil {
				return nil, err
			}
			raw, err := marshalResult(res)
			if err != nil {
				return nil, fenixerr.Runtime("result of tool %q is not JSON-encodable: %v", spec.Name, err).WithTool(spec.Name)
			}
			return raw, nil
		},
		project: func(args map[string]any, raw json.RawMessage) (Projection, error) {
			a, err := decode(args)
			if err != nil {
				return Projection{}, err
			}
			var res R
			if err := json.Unmarshal(raw, &res); err != nil {
				return Projection{}, fmt.Errorf("raw result does not decode: %w", err)
			}
			return project(a, res), nil
		},
		owner: spec.Owner,
	}
}

func (spec *Spec) applyDefaults() {
	if spec.Timeout == 0 {
		spec.Timeout = 60 * time.Second
	}
	if spec.MaxArgBytes == 0 {
		spec.MaxArgBytes = DefaultMaxArgumentBytes
	}
}

func (spec Spec) descriptor(schema json.RawMessage) Descriptor {
	return Descriptor{
		Name:             spec.Name,
		Description:      spec.Description,
		RegistryBacked:   spec.RegistryBacked,
		Idempotent:       spec.Idempotent,
		Local:            spec.Local,
		ReadOnly:         spec.ReadOnly,
		NeedsWorkspace:   spec.NeedsWorkspace,
		WatchesWorkspace: spec.WatchesWorkspace,
		TimeoutSeconds:   int(spec.Timeout / time.Second),
		HeartbeatSeconds: int(spec.Heartbeat / time.Second),
		Schema:           schema,
		MaxArgBytes:      spec.MaxArgBytes,
		Declared:         spec.Declared,
	}
}

// checkArguments encodes a call's arguments and checks them against the
// size cap and the schema; it returns the encoding.
func checkArguments(name string, maxBytes int, compiled *validator.Schema, args map[string]any) ([]byte, error) {
	raw, err := json.Marshal(args)
	if err != nil {
		return nil, fenixerr.Validation("arguments of tool %q are not JSON-encodable: %v", name, err).WithTool(name)
	}
	if len(raw) > maxBytes {
		return nil, fenixerr.PayloadTooLarge("arguments of tool %q are %d bytes, over the limit of %d bytes", name, len(raw), maxBytes).WithTool(name)
	}
	inst, err := validator.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, fenixerr.Validation("arguments of tool %q are not valid JSON: %v", name, err).WithTool(name)
	}
	if compiled == nil {
		return raw, nil // a recursive dynamic schema (DefineDynamic)
	}
	if err := compiled.Validate(inst); err != nil {
		return nil, fenixerr.Validation("arguments of tool %q do not match its schema: %s", name, describeSchemaError(err)).WithTool(name)
	}
	return raw, nil
}

// EncodeResult encodes a raw result as executors return it (MCP results
// use it too).
func EncodeResult(v any) (json.RawMessage, error) { return marshalResult(v) }

// marshalResult encodes a raw result without HTML escaping: results are
// never embedded in HTML, and escaping would grow output full of '<' six-fold.
func marshalResult(v any) (json.RawMessage, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

func compileSchema[A any](name string) (json.RawMessage, *validator.Schema) {
	reflector := &jsonschema.Reflector{DoNotReference: true, ExpandedStruct: true}
	var zero A
	schema := reflector.Reflect(&zero)
	schema.Version = ""
	schema.ID = ""
	raw, err := json.Marshal(schema)
	if err != nil {
		panic(fmt.Sprintf("tool %q: schema does not marshal: %v", name, err))
	}
	doc, err := validator.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		panic(fmt.Sprintf("tool %q: schema does not parse: %v", name, err))
	}
	c := validator.NewCompiler()
	url := "fenix://tools/" + name + ".json"
	if err := c.AddResource(url, doc); err != nil {
		panic(fmt.Sprintf("tool %q: schema resource: %v", name, err))
	}
	compiled, err := c.Compile(url)
	if err != nil {
		panic(fmt.Sprintf("tool %q: schema does not compile: %v", name, err))
	}
	return raw, compiled
}

var printer = message.NewPrinter(language.English)

// describeSchemaError flattens a validation error into one line that names
// the offending argument.
func describeSchemaError(err error) string {
	var ve *validator.ValidationError
	if !errors.As(err, &ve) {
		return err.Error()
	}
	var parts []string
	more := 0
	var walk func(e *validator.ValidationError)
	walk = func(e *validator.ValidationError) {
		if len(e.Causes) == 0 {
			if len(parts) == maxSchemaErrors {
				more++
				return
			}
			loc := contract.TruncateText("/"+strings.Join(e.InstanceLocation, "/"), 256)
			parts = append(parts, fmt.Sprintf("at %s: %s", loc, contract.TruncateText(e.ErrorKind.LocalizedString(printer), 512)))
			return
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(ve)
	if more > 0 {
		parts = append(parts, fmt.Sprintf("and %d more", more))
	}
	return strings.Join(parts, "; ")
}

// maxSchemaErrors is how many of an argument's schema errors a
// ValidationError names: each element of a 120,000-element array can fail
// on its own, and the model needs the first few to fix its call.
const maxSchemaErrors = 20
