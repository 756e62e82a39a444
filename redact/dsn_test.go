package redact

import "testing"

func TestDSN(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"postgres URL", "postgres://fenix:s3cret@db:5432/fenix?sslmode=disable", "postgres://fenix:xxxxx@db:5432/fenix?sslmode=disable"},
		{"postgresql URL", "postgresql://fenix:s3cret@db/fenix", "postgresql://fenix:xxxxx@db/fenix"},
		{"URL without password", "postgres://fenix@db:5432/fenix", "postgres://fenix@db:5432/fenix"},
		{"URL without user", "postgres://db:5432/fenix?sslmode=disable", "postgres://db:5432/fenix?sslmode=disable"},
		{"password in query", "postgres://db/fenix?user=fenix&password=s3cret", "postgres://db/fenix?password=xxxxx&user=fenix"},
		{"key=value", "host=db user=fenix password=s3cret dbname=fenix", "host=db user=fenix password=xxxxx dbname=fenix"},
		{"key=value quoted", "host=db password='s3 \\'cret' dbname=fenix", "host=db password=xxxxx dbname=fenix"},
		{"key=value spaced and upper case", "host=db PASSWORD = s3cret sslpassword=k3y", "host=db PASSWORD = xxxxx sslpassword=xxxxx"},
		{"key=value without password", "host=db user=fenix dbname=fenix", "host=db user=fenix dbname=fenix"},
		{"unparsable URL", "postgres://fenix:s3cret@db:port/fenix", "(unparsable DSN)"},
		{"directory", "/var/lib/fenix/contexts", "/var/lib/fenix/contexts"},
		{"empty", "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := DSN(tc.in); got != tc.want {
				t.Errorf("DSN(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}
