package hooks

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"hash"
	"slices"
)

// PolicySource is a hook settings file as the registry loaded it, or
// (Script set) a file its hooks run, as pinned at load.
type PolicySource struct {
	Path   string
	Data   []byte
	Script bool
}

// RecordSource records a loaded hook settings file, so the policy
// fingerprint changes when its contents do. Loaders call it once per file,
// in load order, next to adding the file's hooks.
func (r *Registry) RecordSource(path string, data []byte) {
	r.policy = append(r.policy, PolicySource{Path: path, Data: slices.Clone(data)})
}

// PolicySources lists the recorded hook settings files in load order.
func (r *Registry) PolicySources() []PolicySource { return slices.Clone(r.policy) }

// fingerprintVersion changes when what the fingerprint covers does, so
// fingerprints of different definitions never compare equal.
const fingerprintVersion = "fenix-policy-v1"

// PolicyIdentifier is implemented by hooks whose verdicts depend on more
// than the settings that define them: a prompt hook's judge is the model
// the worker sends it to, which the operator's environment picks.
type PolicyIdentifier interface {
	// PolicyIdentity names what else decides; "" for nothing.
	PolicyIdentity() string
}

// PolicyFingerprint identifies the policy a verdict was made under: the
// bytes of every loaded hook settings file (not their paths: the same file
// deployed elsewhere is the same policy) and of the scripts its hooks run
// (named relative to their project), the names of every registered
// hook in order (built-ins, command hooks and Go hooks) with what else
// decides their verdicts (PolicyIdentifier: a prompt hook's model) and
// the call's allow-list (as a set). Every Review, PreToolUse and PermissionRequest
// verdict records it, so starter policy-diff can say which policy made a
// recorded decision and whether the candidate is the same one.
func (r *Registry) PolicyFingerprint(allowedTools []string) string {
	h := sha256.New()
	writeField(h, fingerprintVersion)
	for _, src := range r.policy {
		if src.Script {
			// A script's name (relative to its project) says which
			// command runs it; its bytes are what runs.
			writeField(h, "script")
			writeField(h, src.Path)
			writeField(h, string(src.Data))
			continue
		}
		writeField(h, "source")
		writeField(h, string(src.Data))
	}
	if r.permissions != nil {
		// A policy with nothing of its own (a session's mode only) leaves
		// the fingerprint as it was without one.
		if fp := r.permissions.Fingerprint(); fp != "" {
			writeField(h, "permissions")
			writeField(h, fp)
		}
	}
	for _, e := range r.entries {
		writeField(h, "hook")
		writeField(h, e.name)
		if pi, ok := e.hook.(PolicyIdentifier); ok {
			if id := pi.PolicyIdentity(); id != "" {
				writeField(h, "decided-by")
				writeField(h, id)
			}
		}
	}
	allowed := slices.Clone(allowedTools)
	slices.Sort(allowed)
	for _, name := range slices.Compact(allowed) {
		writeField(h, "allow")
		writeField(h, name)
	}
	return hex.EncodeToString(h.Sum(nil)[:8])
}

// writeField writes a length-prefixed field, so no two different field
// lists hash the same bytes.
func writeField(h hash.Hash, s string) {
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], uint64(len(s)))
	h.Write(n[:])
	h.Write([]byte(s))
}
