package redact

import (
	"net/url"
	"regexp"
	"strings"
)

// dsnPasswordMask replaces a password in a connection string; it is what
// url.URL.Redacted writes.
const dsnPasswordMask = "xxxxx"

// dsnPasswordKeys are the connection-string keys whose values are secrets.
var dsnPasswordKeys = []string{"password", "sslpassword"}

// dsnKeyValuePassword matches password=value in a key=value DSN; the value
// is a single-quoted string (with \' escapes) or runs to the next space.
var dsnKeyValuePassword = regexp.MustCompile(`(?i)\b((?:ssl)?password\s*=\s*)(?:'(?:[^'\\]|\\.)*'|\S*)`)

// DSN hides the password in a database connection string so the string
// can go into messages and logs. A URL (postgres://user:pw@host/db?...)
// keeps everything but the password, which becomes "xxxxx", also in a
// password query parameter; a key=value DSN (host=db password=pw) keeps
// every pair, with password values replaced; anything else is returned
// as it is. A URL that does not parse is replaced as a whole, since its
// password cannot be found.
func DSN(dsn string) string {
	if strings.Contains(dsn, "://") {
		return redactDSNURL(dsn)
	}
	return dsnKeyValuePassword.ReplaceAllString(dsn, "${1}"+dsnPasswordMask)
}

func redactDSNURL(dsn string) string {
	u, err := url.Parse(dsn)
	if err != nil {
		return "(unparsable DSN)"
	}
	if u.RawQuery != "" {
		q := u.Query()
		masked := false
		for key := range q {
			for _, secret := range dsnPasswordKeys {
				if strings.EqualFold(key, secret) {
					q.Set(key, dsnPasswordMask)
					masked = true
				}
			}
		}
		if masked {
			u.RawQuery = q.Encode()
		}
	}
	return u.Redacted()
}
