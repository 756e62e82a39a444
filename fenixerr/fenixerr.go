// Package fenixerr defines Fenix's typed errors, their classification
// (authorization / semantic / runtime) and their mapping to and from
// Temporal application errors.
//
// Every error raised by a stage is non-retryable: a tool that rejected its
// input will reject it again. Only Transient errors (infrastructure that may
// recover) are retried, and only by stages that are safe to repeat.
package fenixerr

import (
	"context"
	"errors"
	"fmt"
	"unicode/utf8"

	"go.temporal.io/sdk/temporal"
)

// Class is the coarse error classification the kernel acts on.
type Class string

const (
	ClassAuthorization Class = "authorization"
	ClassSemantic      Class = "semantic"
	ClassRuntime       Class = "runtime"
)

// Error type names. They are the Temporal ApplicationError types, so they
// are part of the public contract.
const (
	TypeUnsupportedTool   = "UnsupportedToolError"
	TypeToolNotVisible    = "ToolNotVisibleError"
	TypeValidation        = "ValidationError"
	TypeInvalidAssignment = "InvalidAssignmentError"
	TypeWorkspaceEscape   = "WorkspaceEscapeError"
	TypePayloadTooLarge   = "PayloadTooLargeError"
	TypeToolUnavailable   = "ToolUnavailableError"
	TypeToolBlocked       = "ToolBlockedError"
	TypePermissionDenied  = "PermissionDeniedError"
	TypeToolTimeout       = "ToolTimeoutError"
	TypeWorkerLost        = "WorkerLostError"
	TypeModelProvider     = "ModelProviderError"
	TypeCanceled          = "CanceledError"
	TypeRuntime           = "RuntimeError"
	TypeTransient         = "TransientError"
	TypeStepLimit         = "StepLimitError"
	// TypePromptBlocked: a UserPromptSubmit hook refused the turn's prompt.
	TypePromptBlocked = "PromptBlockedError"
	// TypeHookHalt: a hook ended the turn ("continue": false).
	TypeHookHalt = "HookHaltError"
)

type kind struct {
	class  Class
	code   string
	parent string
}

// kinds is the error hierarchy: ToolNotVisibleError is a kind of
// UnsupportedToolError, as in the seed, and the input errors are kinds of
// ValidationError.
var kinds = map[string]kind{
	TypeUnsupportedTool:   {ClassSemantic, "unsupported_tool", ""},
	TypeToolNotVisible:    {ClassAuthorization, "tool_not_allowed", TypeUnsupportedTool},
	TypeValidation:        {ClassSemantic, "validation_error", ""},
	TypeInvalidAssignment: {ClassSemantic, "invalid_assignment", TypeValidation},
	TypeWorkspaceEscape:   {ClassAuthorization, "path_outside_workspace", TypeValidation},
	TypePayloadTooLarge:   {ClassSemantic, "payload_too_large", TypeValidation},
	TypeToolUnavailable:   {ClassRuntime, "tool_unavailable", ""},
	TypeToolBlocked:       {ClassAuthorization, "blocked_by_hook", ""},
	TypePermissionDenied:  {ClassAuthorization, "permission_denied", TypeToolBlocked},
	TypeToolTimeout:       {ClassRuntime, "tool_timeout", TypeRuntime},
	TypeWorkerLost:        {ClassRuntime, "worker_lost", TypeRuntime},
	TypeModelProvider:     {ClassRuntime, "model_provider_error", TypeRuntime},
	TypeCanceled:          {ClassRuntime, "canceled", ""},
	TypeRuntime:           {ClassRuntime, "runtime_error", ""},
	TypeTransient:         {ClassRuntime, "transient_error", TypeRuntime},
	TypeStepLimit:         {ClassSemantic, "max_steps_reached", ""},
	TypePromptBlocked:     {ClassAuthorization, "prompt_blocked", ""},
	TypeHookHalt:          {ClassAuthorization, "halted_by_hook", ""},
}

// Error is a classified Fenix error.
type Error struct {
	Type    string
	Class   Class
	Code    string
	Message string
	// Tool names the tool at fault, when there is one.
	Tool string
	// PolicyFingerprint identifies the policy that rejected a tool call
	// (hooks.Registry.PolicyFingerprint), when a policy did.
	PolicyFingerprint string
	Cause             error
}

func (e *Error) Error() string { return e.Message }
func (e *Error) Unwrap() error { return e.Cause }

// Is reports whether e is of the kind of target, following the hierarchy:
// errors.Is(toolNotVisible, ErrUnsupportedTool) is true.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	if !ok || t.Message != "" {
		return false
	}
	for typ := e.Type; typ != ""; typ = kinds[typ].parent {
		if typ == t.Type {
			return true
		}
	}
	return false
}

// Sentinels for errors.Is.
var (
	ErrUnsupportedTool   = &Error{Type: TypeUnsupportedTool}
	ErrToolNotVisible    = &Error{Type: TypeToolNotVisible}
	ErrValidation        = &Error{Type: TypeValidation}
	ErrInvalidAssignment = &Error{Type: TypeInvalidAssignment}
	ErrWorkspaceEscape   = &Error{Type: TypeWorkspaceEscape}
	ErrPayloadTooLarge   = &Error{Type: TypePayloadTooLarge}
	ErrToolUnavailable   = &Error{Type: TypeToolUnavailable}
	ErrToolBlocked       = &Error{Type: TypeToolBlocked}
	ErrPermissionDenied  = &Error{Type: TypePermissionDenied}
	ErrToolTimeout       = &Error{Type: TypeToolTimeout}
	ErrWorkerLost        = &Error{Type: TypeWorkerLost}
	ErrModelProvider     = &Error{Type: TypeModelProvider}
	ErrCanceled          = &Error{Type: TypeCanceled}
	ErrRuntime           = &Error{Type: TypeRuntime}
	ErrTransient         = &Error{Type: TypeTransient}
	ErrPromptBlocked     = &Error{Type: TypePromptBlocked}
	ErrHookHalt          = &Error{Type: TypeHookHalt}
)

// New builds an error of the given type with its class and code.
func New(typ, format string, args ...any) *Error {
	k, ok := kinds[typ]
	if !ok {
		k = kinds[TypeRuntime]
		typ = TypeRuntime
	}
	return &Error{Type: typ, Class: k.class, Code: k.code, Message: fmt.Sprintf(format, args...)}
}

// WithTool records the tool at fault.
func (e *Error) WithTool(name string) *Error { e.Tool = name; return e }

// WithPolicyFingerprint records the policy that rejected the call.
func (e *Error) WithPolicyFingerprint(fp string) *Error { e.PolicyFingerprint = fp; return e }

// WithCause records the underlying error.
func (e *Error) WithCause(err error) *Error { e.Cause = err; return e }

// WithCode overrides the default code with a more specific one.
func (e *Error) WithCode(code string) *Error { e.Code = code; return e }

// Constructors for the common kinds.
func UnsupportedTool(name string) *Error {
	return New(TypeUnsupportedTool, "tool %q is not in the tool registry", name).WithTool(name)
}

func ToolNotVisible(name, profile string) *Error {
	return New(TypeToolNotVisible, "tool %q is not in allowed_tool_names for profile %s", name, profile).WithTool(name)
}

func Validation(format string, args ...any) *Error { return New(TypeValidation, format, args...) }

func InvalidAssignment(err error) *Error {
	return New(TypeInvalidAssignment, "%s", err.Error()).WithCause(err)
}

func WorkspaceEscape(format string, args ...any) *Error {
	return New(TypeWorkspaceEscape, format, args...)
}

func PayloadTooLarge(format string, args ...any) *Error {
	return New(TypePayloadTooLarge, format, args...)
}

func Runtime(format string, args ...any) *Error { return New(TypeRuntime, format, args...) }

// Transient marks an infrastructure failure that a retry may fix.
func Transient(err error) *Error {
	return New(TypeTransient, "%s", err.Error()).WithCause(err)
}

// As extracts a *Error from err, classifying anything else as a runtime
// error so every failure ends with a class and a code.
func As(err error) *Error {
	if err == nil {
		return nil
	}
	var fe *Error
	if errors.As(err, &fe) {
		return fe
	}
	return New(TypeRuntime, "%s", err.Error()).WithCause(err)
}

// Details is what travels inside a Temporal ApplicationError.
type Details struct {
	Class             Class  `json:"class"`
	Code              string `json:"code"`
	Tool              string `json:"tool,omitempty"`
	PolicyFingerprint string `json:"policy_fingerprint,omitempty"`
}

// ToTemporal converts an activity error into a Temporal error. Fenix errors
// become non-retryable application errors (Transient ones stay retryable);
// context cancellation passes through so the SDK reports the activity as
// canceled, not failed. Its messages are valid UTF-8 (see ValidUTF8).
func ToTemporal(err error) error {
	return ValidUTF8(toTemporal(err))
}

func toTemporal(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, context.Canceled) {
		return err
	}
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) {
		return err
	}
	fe := bounded(As(err))
	details := Details{Class: fe.Class, Code: fe.Code, Tool: fe.Tool, PolicyFingerprint: fe.PolicyFingerprint}
	if fe.Type == TypeTransient {
		return temporal.NewApplicationErrorWithCause(fe.Message, fe.Type, fe.Cause, details)
	}
	if fe.Expected() {
		// The SDK logs a benign activity failure at debug, not error.
		return temporal.NewApplicationErrorWithOptions(fe.Message, fe.Type, temporal.ApplicationErrorOptions{
			NonRetryable: true, Cause: fe.Cause, Details: []any{details}, Category: temporal.ApplicationErrorCategoryBenign})
	}
	return temporal.NewNonRetryableApplicationError(fe.Message, fe.Type, fe.Cause, details)
}

// maxMessageBytes bounds an error's message, and its cause's, on the way
// into history: a schema error listing each of 120,000 bad elements of an
// argument made the workflow task larger than the server takes
// (GRPC_MESSAGE_TOO_LARGE), and the run, its task failing on every
// attempt, never ended.
const maxMessageBytes = 8 << 10

// bounded is e with its message and cause cut to maxMessageBytes, a copy
// when anything is cut.
func bounded(e *Error) *Error {
	long := func(s string) bool { return len(s) > maxMessageBytes }
	if !long(e.Message) && (e.Cause == nil || !long(e.Cause.Error())) {
		return e
	}
	c := *e
	if long(c.Message) {
		c.Message = cutMessage(c.Message)
	}
	if c.Cause != nil && long(c.Cause.Error()) {
		c.Cause = errors.New(cutMessage(c.Cause.Error()))
	}
	return &c
}

// cutMessage keeps the first maxMessageBytes of s, at a character's start, and
// says how much it left out.
func cutMessage(s string) string {
	n := maxMessageBytes
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + fmt.Sprintf(" … [%d more bytes cut by Fenix]", len(s)-n)
}

// Expected reports a refusal the policy meant to make (a path outside the
// workspace or protected, a tool not allowed, a blocked or denied call):
// the system worked, so it is logged at info, not error.
func (e *Error) Expected() bool { return e.Class == ClassAuthorization }

// FromTemporal turns an error returned to workflow code (usually an
// ActivityError wrapping an ApplicationError, TimeoutError or CanceledError)
// back into a classified Fenix error.
func FromTemporal(err error) *Error {
	if err == nil {
		return nil
	}
	var fe *Error
	if errors.As(err, &fe) {
		return fe
	}
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) {
		typ := appErr.Type()
		if _, known := kinds[typ]; !known {
			typ = TypeRuntime
		}
		out := New(typ, "%s", appErr.Message())
		var d Details
		if appErr.HasDetails() && appErr.Details(&d) == nil {
			if d.Class != "" {
				out.Class = d.Class
			}
			if d.Code != "" {
				out.Code = d.Code
			}
			out.Tool = d.Tool
			out.PolicyFingerprint = d.PolicyFingerprint
		}
		out.Cause = err
		return out
	}
	var timeoutErr *temporal.TimeoutError
	if errors.As(err, &timeoutErr) {
		return New(TypeWorkerLost, "stage did not finish: %s timeout (the worker running it stopped responding or the stage ran too long)",
			timeoutErr.TimeoutType().String()).WithCause(err)
	}
	var canceledErr *temporal.CanceledError
	if errors.As(err, &canceledErr) || errors.Is(err, context.Canceled) {
		return New(TypeCanceled, "stage canceled").WithCause(err)
	}
	var panicErr *temporal.PanicError
	if errors.As(err, &panicErr) {
		return New(TypeRuntime, "stage panicked: %s", panicErr.Error()).WithCause(err)
	}
	return New(TypeRuntime, "%s", err.Error()).WithCause(err)
}
