package codec

import (
	"bufio"
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"
)

// Environment variables read by KeyringFromEnv.
const (
	// EnvKey is one base64-encoded 32-byte key; its ID is KeyFingerprint.
	EnvKey = "FENIX_CODEC_KEY"
	// EnvKeyFile names a file of "id=base64key" lines; the first is active.
	EnvKeyFile = "FENIX_CODEC_KEY_FILE"
)

// KeySize is the AES-256 key length in bytes.
const KeySize = 32

// Key is one named AES-256 key. Its String hides the secret.
type Key struct {
	ID     string
	Secret []byte
}

func (k Key) String() string   { return fmt.Sprintf("codec key %q", k.ID) }
func (k Key) GoString() string { return k.String() }

var keyIDPattern = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)

// Keyring holds the keys: the first (active) encrypts, all decrypt.
type Keyring struct {
	active string
	ids    []string
	aeads  map[string]cipher.AEAD
}

// NewKeyring checks and loads keys; keys[0] becomes the active key.
func NewKeyring(keys ...Key) (*Keyring, error) {
	if len(keys) == 0 {
		return nil, errors.New("codec keyring needs at least one key")
	}
	kr := &Keyring{active: keys[0].ID, aeads: make(map[string]cipher.AEAD, len(keys))}
	for _, k := range keys {
		if !keyIDPattern.MatchString(k.ID) {
			return nil, fmt.Errorf("codec key id %q: use 1 to 64 letters, digits, '.', '_' or '-'", k.ID)
		}
		if _, dup := kr.aeads[k.ID]; dup {
			return nil, fmt.Errorf("codec key id %q appears twice; key ids must be unique", k.ID)
		}
		if len(k.Secret) != KeySize {
			return nil, fmt.Errorf("codec key %q is %d bytes; AES-256 needs exactly %d (generate one with: openssl rand -base64 32)", k.ID, len(k.Secret), KeySize)
		}
		block, err := aes.NewCipher(k.Secret)
		if err != nil {
			return nil, fmt.Errorf("codec key %q: %w", k.ID, err)
		}
		aead, err := cipher.NewGCM(block)
		if err != nil {
			return nil, fmt.Errorf("codec key %q: %w", k.ID, err)
		}
		kr.aeads[k.ID] = aead
		kr.ids = append(kr.ids, k.ID)
	}
	return kr, nil
}

// ActiveKeyID is the ID new payloads are encrypted with.
func (kr *Keyring) ActiveKeyID() string { return kr.active }

// KeyIDs lists all loaded key IDs, active first.
func (kr *Keyring) KeyIDs() []string { return append([]string(nil), kr.ids...) }

// KeyFingerprint is the ID given to a key from FENIX_CODEC_KEY: the first
// 16 hex digits of its SHA-256, so the same key always gets the same ID and
// a later key file can keep decrypting old payloads under it. In a shell:
// printf %s "$FENIX_CODEC_KEY" | base64 -d | sha256sum | cut -c1-16
func KeyFingerprint(secret []byte) string {
	sum := sha256.Sum256(secret)
	return hex.EncodeToString(sum[:8])
}

// KeyringFromEnv loads keys from FENIX_CODEC_KEY or FENIX_CODEC_KEY_FILE.
// It returns nil, nil when neither is set: encryption is off.
func KeyringFromEnv(getenv func(string) string) (*Keyring, error) {
	key, file := getenv(EnvKey), getenv(EnvKeyFile)
	switch {
	case key != "" && file != "":
		return nil, fmt.Errorf("both %s and %s are set: use %s alone for key rotation", EnvKey, EnvKeyFile, EnvKeyFile)
	case key != "":
		secret, err := decodeKey(strings.TrimSpace(key))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", EnvKey, err)
		}
		return NewKeyring(Key{ID: KeyFingerprint(secret), Secret: secret})
	case file != "":
		return LoadKeyFile(file)
	default:
		return nil, nil
	}
}

// LoadKeyFile reads a key file: one "id=base64key" per line, the first
// active; blank lines and lines starting with '#' are skipped.
func LoadKeyFile(path string) (*Keyring, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read codec key file: %w", err)
	}
	keys, err := ParseKeyFile(data)
	if err != nil {
		return nil, fmt.Errorf("codec key file %q: %w", path, err)
	}
	kr, err := NewKeyring(keys...)
	if err != nil {
		return nil, fmt.Errorf("codec key file %q: %w", path, err)
	}
	return kr, nil
}

// ParseKeyFile parses the key file format of LoadKeyFile. Errors name the
// line but never echo key material.
func ParseKeyFile(data []byte) ([]Key, error) {
	var keys []Key
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		id, encoded, ok := strings.Cut(line, "=")
		id, encoded = strings.TrimSpace(id), strings.TrimSpace(encoded)
		if !ok || id == "" || encoded == "" {
			return nil, fmt.Errorf("line %d: want id=base64key", n)
		}
		if !keyIDPattern.MatchString(id) {
			return nil, fmt.Errorf("line %d: key id %q: use 1 to 64 letters, digits, '.', '_' or '-'", n, id)
		}
		secret, err := decodeKey(encoded)
		if err != nil {
			return nil, fmt.Errorf("line %d (key %q): %w", n, id, err)
		}
		keys = append(keys, Key{ID: id, Secret: secret})
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(keys) == 0 {
		return nil, errors.New("no keys: want one id=base64key line per key, the active key first")
	}
	return keys, nil
}

// decodeKey accepts standard or URL-safe base64, padded or not.
func decodeKey(s string) ([]byte, error) {
	var firstErr error
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		b, err := enc.DecodeString(s)
		if err == nil {
			if len(b) != KeySize {
				return nil, fmt.Errorf("key decodes to %d bytes; AES-256 needs exactly %d (generate one with: openssl rand -base64 32)", len(b), KeySize)
			}
			return b, nil
		}
		if firstErr == nil {
			firstErr = err
		}
	}
	return nil, fmt.Errorf("key is not valid base64 (%v)", firstErr)
}
