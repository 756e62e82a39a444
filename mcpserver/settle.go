package mcpserver

import (
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The SDK settles the fields a result needs on the wire for the results
// its own handlers build; the gateway answers the resource and prompt
// methods itself (resourceMethods), so it settles them: a cache scope
// (required from protocol 2026-07-28, and refused empty by clients that
// check it, such as the Python SDK's v2) and, for a client on 2026-07-28,
// the result type of a read or a prompt (multi round-trip requests,
// SEP-2322: "complete", since the gateway asks its questions otherwise).

// gatewayCacheScope is the cache scope of what the gateway answers:
// every listing, read and prompt is a governed run judged for the
// session's conversation, so no intermediary may serve it to another.
const gatewayCacheScope = "private"

// multiRoundTripVersion is the first protocol version whose reads and
// prompts carry a result type.
const multiRoundTripVersion = "2026-07-28"

// settled is result with the fields the SDK would have settled.
func settled(req mcp.Request, result mcp.Result) mcp.Result {
	complete := multiRoundTrip(req)
	switch r := result.(type) {
	case *mcp.ListResourcesResult:
		r.CacheScope = scopeOr(r.CacheScope)
	case *mcp.ListResourceTemplatesResult:
		r.CacheScope = scopeOr(r.CacheScope)
	case *mcp.ListPromptsResult:
		r.CacheScope = scopeOr(r.CacheScope)
	case *mcp.ReadResourceResult:
		r.CacheScope = scopeOr(r.CacheScope)
		if complete {
			out := completeResult[mcp.ReadResourceResult]()
			out.Meta, out.Contents, out.Cacheable = r.Meta, r.Contents, r.Cacheable
			return out
		}
	case *mcp.GetPromptResult:
		if complete {
			out := completeResult[mcp.GetPromptResult]()
			out.Meta, out.Description, out.Messages = r.Meta, r.Description, r.Messages
			return out
		}
	}
	return result
}

func scopeOr(scope string) string {
	if scope == "" {
		return gatewayCacheScope
	}
	return scope
}

// multiRoundTrip reports whether the request's session speaks a protocol
// version whose reads and prompts carry a result type.
func multiRoundTrip(req mcp.Request) bool {
	ss, ok := req.GetSession().(*mcp.ServerSession)
	if !ok || ss == nil {
		return false
	}
	// As the SDK reads it: a session that never initialized speaks the
	// newest version (2026-07-28 needs no initialize).
	params := ss.InitializeParams()
	return params == nil || params.ProtocolVersion >= multiRoundTripVersion
}

// completeResult is a T whose result type is "complete": the SDK keeps
// the field to itself and sets it only through its own decoding.
func completeResult[T any]() *T {
	out := new(T)
	if err := json.Unmarshal([]byte(`{"resultType":"complete"}`), out); err != nil {
		panic("mcpserver: the SDK no longer decodes resultType: " + err.Error())
	}
	return out
}
