package codec

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func b64(secret []byte) string { return base64.StdEncoding.EncodeToString(secret) }

func TestKeyringFromEnvKey(t *testing.T) {
	k := newKey(t, "unused")
	t.Setenv(EnvKeyFile, "")
	t.Setenv(EnvKey, b64(k.Secret))
	kr, err := KeyringFromEnv(os.Getenv)
	if err != nil {
		t.Fatalf("KeyringFromEnv: %v", err)
	}
	if got, want := kr.ActiveKeyID(), KeyFingerprint(k.Secret); got != want || len(got) != 16 {
		t.Errorf("ActiveKeyID = %q, want the 16-digit fingerprint %q", got, want)
	}

	// URL-safe and unpadded forms are accepted too.
	t.Setenv(EnvKey, base64.RawURLEncoding.EncodeToString(k.Secret))
	if kr2, err := KeyringFromEnv(os.Getenv); err != nil || kr2.ActiveKeyID() != kr.ActiveKeyID() {
		t.Errorf("raw URL base64 key: %v, id %v", err, kr2)
	}
}

func TestKeyringFromEnvUnset(t *testing.T) {
	t.Setenv(EnvKey, "")
	t.Setenv(EnvKeyFile, "")
	kr, err := KeyringFromEnv(os.Getenv)
	if kr != nil || err != nil {
		t.Fatalf("KeyringFromEnv(os.Getenv) = %v, %v; want nil, nil (encryption off)", kr, err)
	}
	c, err := FromEnv(os.Getenv)
	if c != nil || err != nil {
		t.Fatalf("FromEnv(os.Getenv) = %v, %v; want nil, nil", c, err)
	}
}

func TestKeyringFromEnvErrors(t *testing.T) {
	short := base64.StdEncoding.EncodeToString(make([]byte, 16))
	tests := []struct {
		name, key, file, want string
	}{
		{"both set", short, "/x", "both FENIX_CODEC_KEY and FENIX_CODEC_KEY_FILE are set"},
		{"short key", short, "", "FENIX_CODEC_KEY: key decodes to 16 bytes; AES-256 needs exactly 32"},
		{"not base64", "not*base64!", "", "FENIX_CODEC_KEY: key is not valid base64"},
		{"missing file", "", "/nonexistent/fenix-keys", "read codec key file: open /nonexistent/fenix-keys"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(EnvKey, tt.key)
			t.Setenv(EnvKeyFile, tt.file)
			_, err := KeyringFromEnv(os.Getenv)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error = %v, want it to contain %q", err, tt.want)
			}
		})
	}
}

func TestLoadKeyFile(t *testing.T) {
	active, old := newKey(t, "2025-06"), newKey(t, "2025-01")
	path := filepath.Join(t.TempDir(), "keys")
	content := fmt.Sprintf("# active first\n%s=%s\n\n  %s = %s  \n", active.ID, b64(active.Secret), old.ID, b64(old.Secret))
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv(EnvKey, "")
	t.Setenv(EnvKeyFile, path)
	kr, err := KeyringFromEnv(os.Getenv)
	if err != nil {
		t.Fatalf("KeyringFromEnv: %v", err)
	}
	if kr.ActiveKeyID() != "2025-06" || strings.Join(kr.KeyIDs(), ",") != "2025-06,2025-01" {
		t.Errorf("active %q, ids %v; want 2025-06 first, then 2025-01", kr.ActiveKeyID(), kr.KeyIDs())
	}
}

func TestParseKeyFileErrors(t *testing.T) {
	good := b64(newKey(t, "x").Secret)
	short := b64(make([]byte, 31))
	tests := []struct {
		name, content, want string
	}{
		{"empty", "# nothing\n\n", "no keys"},
		{"no equals", "k1 " + good, "line 1: want id=base64key"},
		{"empty id", "=" + good, "line 1: want id=base64key"},
		{"bad id", "my key=" + good, `line 1: key id "my key"`},
		{"short key", "k1=" + good + "\nk2=" + short, `line 2 (key "k2"): key decodes to 31 bytes`},
		{"bad base64", "k1=%%%%", `line 1 (key "k1"): key is not valid base64`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseKeyFile([]byte(tt.content))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error = %v, want it to contain %q", err, tt.want)
			}
			if err != nil && strings.Contains(err.Error(), good) {
				t.Fatalf("error %q leaks key material", err)
			}
		})
	}
}

func TestLoadKeyFileDuplicateID(t *testing.T) {
	path := filepath.Join(t.TempDir(), "keys")
	k := b64(newKey(t, "x").Secret)
	if err := os.WriteFile(path, []byte("a="+k+"\na="+k+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := LoadKeyFile(path)
	if err == nil || !strings.Contains(err.Error(), `codec key id "a" appears twice`) || !strings.Contains(err.Error(), path) {
		t.Fatalf("error = %v, want a duplicate id error naming the file", err)
	}
}

func TestKeyDoesNotPrintSecret(t *testing.T) {
	k := newKey(t, "k1")
	for _, s := range []string{fmt.Sprint(k), fmt.Sprintf("%v %+v %#v", k, k, k)} {
		if strings.Contains(s, b64(k.Secret)) || bytes.Contains([]byte(s), k.Secret) || strings.Contains(s, fmt.Sprint(k.Secret)) {
			t.Errorf("formatted key %q shows the secret", s)
		}
	}
}
