// Package codec encrypts Temporal payloads with AES-256-GCM, so workflow
// inputs, results and activity arguments are stored in history as
// ciphertext. It supplies the PayloadCodec, a DataConverter for client
// options, key loading with rotation, and a codec server handler that lets
// the Temporal Web UI and CLI show decrypted payloads to authorized users.
package codec

import (
	"crypto/rand"
	"errors"
	"fmt"
	"strings"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"
	"google.golang.org/protobuf/proto"
)

// Payload metadata written by Encode.
const (
	MetadataEncoding         = converter.MetadataEncoding // "encoding"
	MetadataEncryptionKeyID  = "encryption-key-id"
	MetadataEncryptionCipher = "encryption-cipher"

	EncodingEncrypted = "binary/encrypted"
	CipherAES256GCM   = "AES256-GCM"
)

// ErrUnknownKey marks a payload encrypted under a key ID that is not loaded.
var ErrUnknownKey = errors.New("payload encrypted with a key that is not loaded")

// Codec is a converter.PayloadCodec that encrypts every payload with the
// keyring's active key and decrypts with whichever key a payload names.
type Codec struct {
	keys *Keyring
}

var _ converter.PayloadCodec = (*Codec)(nil)

// New returns a codec over keys.
func New(keys *Keyring) (*Codec, error) {
	if keys == nil {
		return nil, errors.New("payload codec needs a keyring: set FENIX_CODEC_KEY or FENIX_CODEC_KEY_FILE")
	}
	return &Codec{keys: keys}, nil
}

// FromEnv returns a codec keyed by FENIX_CODEC_KEY or FENIX_CODEC_KEY_FILE,
// or nil, nil when neither is set (encryption off). getenv is os.Getenv
// in the process's composition root.
func FromEnv(getenv func(string) string) (*Codec, error) {
	kr, err := KeyringFromEnv(getenv)
	if err != nil || kr == nil {
		return nil, err
	}
	return New(kr)
}

// Keyring is the codec's keys.
func (c *Codec) Keyring() *Keyring { return c.keys }

// Encode replaces each payload with nonce||ciphertext of its proto
// encoding, sealed with the active key.
func (c *Codec) Encode(payloads []*commonpb.Payload) ([]*commonpb.Payload, error) {
	id := c.keys.active
	aead := c.keys.aeads[id]
	out := make([]*commonpb.Payload, len(payloads))
	for i, p := range payloads {
		plain, err := proto.Marshal(p)
		if err != nil {
			return payloads, fmt.Errorf("encrypt payload %d: marshal: %w", i, err)
		}
		// Random 96-bit nonces are safe for far more payloads than one key
		// will see before rotation.
		sealed := make([]byte, aead.NonceSize(), aead.NonceSize()+len(plain)+aead.Overhead())
		if _, err := rand.Read(sealed); err != nil {
			return payloads, fmt.Errorf("encrypt payload %d: nonce: %w", i, err)
		}
		sealed = aead.Seal(sealed, sealed[:aead.NonceSize()], plain, nil)
		out[i] = &commonpb.Payload{
			Metadata: map[string][]byte{
				MetadataEncoding:         []byte(EncodingEncrypted),
				MetadataEncryptionKeyID:  []byte(id),
				MetadataEncryptionCipher: []byte(CipherAES256GCM),
			},
			Data: sealed,
		}
	}
	return out, nil
}

// Decode decrypts payloads marked binary/encrypted and passes others
// through unchanged, so histories written before encryption still read.
func (c *Codec) Decode(payloads []*commonpb.Payload) ([]*commonpb.Payload, error) {
	out := make([]*commonpb.Payload, len(payloads))
	for i, p := range payloads {
		if string(p.GetMetadata()[MetadataEncoding]) != EncodingEncrypted {
			out[i] = p
			continue
		}
		plain, err := c.decrypt(p)
		if err != nil {
			return payloads, fmt.Errorf("decrypt payload %d: %w", i, err)
		}
		out[i] = plain
	}
	return out, nil
}

func (c *Codec) decrypt(p *commonpb.Payload) (*commonpb.Payload, error) {
	md := p.GetMetadata()
	// Payloads without a cipher field (the Temporal samples' format) are
	// AES-GCM as well.
	if alg, ok := md[MetadataEncryptionCipher]; ok && string(alg) != CipherAES256GCM {
		return nil, fmt.Errorf("cipher %q is not supported; this codec reads %s", alg, CipherAES256GCM)
	}
	id := string(md[MetadataEncryptionKeyID])
	if id == "" {
		return nil, fmt.Errorf("payload is marked %s but has no %s metadata", EncodingEncrypted, MetadataEncryptionKeyID)
	}
	aead, ok := c.keys.aeads[id]
	if !ok {
		return nil, fmt.Errorf("%w: key id %q (loaded: %s); add it to %s", ErrUnknownKey, id, strings.Join(c.keys.ids, ", "), EnvKeyFile)
	}
	data := p.GetData()
	if len(data) < aead.NonceSize()+aead.Overhead() {
		return nil, fmt.Errorf("ciphertext under key %q is %d bytes, shorter than nonce and tag: truncated payload", id, len(data))
	}
	n := aead.NonceSize()
	plain, err := aead.Open(nil, data[:n], data[n:], nil)
	if err != nil {
		return nil, fmt.Errorf("key %q does not authenticate this payload: it was altered, or the key material under this id changed", id)
	}
	var orig commonpb.Payload
	if err := proto.Unmarshal(plain, &orig); err != nil {
		return nil, fmt.Errorf("decrypted payload under key %q is not a Temporal payload: %w", id, err)
	}
	return &orig, nil
}

// NewDataConverter is Fenix's converter (the SDK's default, with JSON
// written without HTML escaping: jsonPayloadConverter) wrapped with codec,
// for client.Options.DataConverter on every worker and starter. A nil
// codec (encryption off, as FromEnv returns) gives it unwrapped.
func NewDataConverter(codec converter.PayloadCodec) converter.DataConverter {
	if isNil(codec) {
		return dataConverter
	}
	return converter.NewCodecDataConverter(dataConverter, codec)
}

// isNil also catches a nil *Codec inside the interface.
func isNil(codec converter.PayloadCodec) bool {
	c, ok := codec.(*Codec)
	return codec == nil || (ok && c == nil)
}
