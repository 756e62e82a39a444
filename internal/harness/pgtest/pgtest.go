// Package pgtest gives tests a PostgreSQL schema of their own on the server
// named by FENIX_TEST_POSTGRES_DSN (.ci/run starts one), so runs never see
// each other's rows in CI's long-lived database.
package pgtest

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
)

// EnvDSN is the variable naming the test server.
const EnvDSN = "FENIX_TEST_POSTGRES_DSN"

var seq atomic.Int64

// Schema creates a fresh schema, drops it at cleanup, and returns a DSN
// whose search_path is that schema. It skips the test when EnvDSN is unset.
func Schema(tb testing.TB) string {
	tb.Helper()
	base := os.Getenv(EnvDSN)
	if base == "" {
		tb.Skipf("set %s to run this test against PostgreSQL (.ci/run does)", EnvDSN)
	}
	ctx := context.Background()
	schema := fmt.Sprintf("fenix_test_%d_%d", os.Getpid(), seq.Add(1))
	exec := func(sql string) error {
		conn, err := pgx.Connect(ctx, base)
		if err != nil {
			return err
		}
		defer conn.Close(ctx)
		_, err = conn.Exec(ctx, sql)
		return err
	}
	if err := exec("CREATE SCHEMA " + pgx.Identifier{schema}.Sanitize()); err != nil {
		tb.Fatalf("create schema on %s: %v", os.Getenv(EnvDSN), err)
	}
	tb.Cleanup(func() {
		if err := exec("DROP SCHEMA " + pgx.Identifier{schema}.Sanitize() + " CASCADE"); err != nil {
			tb.Errorf("drop schema %s: %v", schema, err)
		}
	})
	u, err := url.Parse(base)
	if err != nil {
		tb.Fatal(err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}
