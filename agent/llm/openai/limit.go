package openai

import (
	"errors"
	"io"
	"net/http"

	"github.com/openai/openai-go/v3/option"
)

// maxResponseBytes bounds what is read of one response, answer or error.
// The SDK reads a body whole into memory: an endpoint sending gigabytes,
// or never ending its answer, would fill the worker's memory until the
// request timeout. An answer CallModel may record is under 2 MiB of JSON;
// even at six bytes a character of escaping it fits here.
const maxResponseBytes = 16 << 20

// errResponseTooLarge ends the read of a body over maxResponseBytes.
var errResponseTooLarge = errors.New("response body over the size limit")

// limitResponses is middleware bounding every response body.
func limitResponses(req *http.Request, next option.MiddlewareNext) (*http.Response, error) {
	resp, err := next(req)
	if resp != nil && resp.Body != nil {
		resp.Body = &limitedBody{rc: resp.Body, left: maxResponseBytes}
	}
	return resp, err
}

// limitedBody reads at most left bytes of rc and fails with
// errResponseTooLarge when rc holds more.
type limitedBody struct {
	rc   io.ReadCloser
	left int64
}

func (b *limitedBody) Read(p []byte) (int, error) {
	if b.left < 0 {
		return 0, errResponseTooLarge
	}
	// One byte past the limit tells a body of exactly the limit from a
	// longer one.
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1]
	}
	n, err := b.rc.Read(p)
	b.left -= int64(n)
	if b.left < 0 {
		return n - 1, errResponseTooLarge
	}
	return n, err
}

func (b *limitedBody) Close() error { return b.rc.Close() }
