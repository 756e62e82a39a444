package contract

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
)

// ArgumentsHash identifies a call's arguments without repeating them: a
// permission decision carries the hash of the arguments the person saw,
// and a lean review records the hash of the arguments it reviewed, so
// `starter verify` can prove a local tool ran with them. encoding/json
// sorts map keys, so the hash is stable.
func ArgumentsHash(args map[string]any) string {
	raw, err := json.Marshal(args)
	if err != nil {
		raw = []byte(fmt.Sprintf("unencodable arguments: %v", err))
	}
	sum := sha256.Sum256(raw)
	return "sha256:" + hex.EncodeToString(sum[:])
}
