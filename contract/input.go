package contract

import (
	"bytes"
	"fmt"
	"strings"
)

// unreadableInputPrefix starts the input a workflow is handed in place of
// a payload no converter of the worker's can read. It begins with a NUL
// byte, which no JSON text does, so no assignment is ever taken for it.
const unreadableInputPrefix = "\x00fenix: unreadable payload encoding "

// UnreadableInput is what the worker's data converter hands a workflow in
// place of an input payload it cannot read (encoded as binary/protobuf,
// with an encoding it does not know, or with none), so that the run ends
// with InvalidAssignmentError naming the encoding instead of its first
// workflow task failing on every attempt, with no result.
func UnreadableInput(encoding string) []byte {
	return []byte(unreadableInputPrefix + encoding)
}

// checkReadable names the encoding of an input UnreadableInput stood in
// for, and what to send instead.
func checkReadable(raw []byte, what string) error {
	rest, ok := bytes.CutPrefix(raw, []byte(unreadableInputPrefix))
	if !ok {
		return nil
	}
	encoding := strings.ToValidUTF8(string(rest), "?")
	if encoding == "" {
		encoding = "(none: the payload has no encoding metadata)"
	}
	hint := ""
	if encoding == "binary/encrypted" {
		hint = " (it was encrypted by a payload codec the worker was not given: FENIX_CODEC_KEY)"
	}
	return fmt.Errorf("%s payload is encoded as %.100q, which the worker cannot read%s: send it as JSON (encoding json/plain)", what, encoding, hint)
}
