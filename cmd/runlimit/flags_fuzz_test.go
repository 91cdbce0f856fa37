package main

import (
	"math"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/migrations"
)

// FuzzCommandFlags runs cleanup, status and migrate with flag values of
// any text, an unexpected argument or an unknown flag of any bytes, and
// $RUNLIMIT_POSTGRES_SCHEMA and $RUNLIMIT_POSTGRES_ROWS_PER_SHARD of any
// text, on a database that refuses at once. The command exits 2, a usage
// error, exactly when a value breaks the rule its help states, as the flag
// package and the documented bounds read it (a whole number, a duration, a
// schema name, the ranges, and for migrate a --timeout PostgreSQL can take
// as a session timeout; a variable only when its flag is absent, as the
// service reads it); otherwise it tries the database and exits 1. Whatever
// the arguments, nothing it writes holds a control character other than a
// line break or a tab: an argument cannot move the cursor, recolour or
// retitle the operator's terminal, or forge a line of a log.
func FuzzCommandFlags(f *testing.F) {
	f.Add(uint8(0), uint8(0xff), "1000", "1000", "0", "3s", "public", "4096", "", "", "")
	f.Add(uint8(0), uint8(0x0f), "0x10", "1_000", "1ms", "60s", "limits", "1", "", "", "")
	f.Add(uint8(0), uint8(0x0f), "0", "-1", "999us", "60.000000001s", "pg_x", "0", "", "", "")
	f.Add(uint8(1), uint8(0x3c), "", "", "", "1m0s", "9lives", "65537", "", "", "")
	f.Add(uint8(1), uint8(0x38), "", "", "", "-1s", "a\x1b[31mb", "65536", "", "", "")
	f.Add(uint8(2), uint8(0x08), "", "", "", "1000h", "", "", "", "", "")
	f.Add(uint8(2), uint8(0x08), "", "", "", "596h31m23.647s", "", "", "", "", "")
	f.Add(uint8(2), uint8(0x08), "", "", "", "596h31m23.648s", "", "", "", "", "")
	f.Add(uint8(0), uint8(0x40), "", "", "", "", "", "", "\x1b]0;owned\x07", "", "")
	f.Add(uint8(1), uint8(0x80), "", "", "", "", "", "", "\x1b[2J\rrunlimit status: ok", "", "")
	f.Add(uint8(2), uint8(0x80), "", "", "", "", "", "", "\u009b31m\x7f", "", "")
	f.Add(uint8(0), uint8(0x01), "\x1b[31m", "", "", "", "", "", "", "", "")
	f.Add(uint8(2), uint8(0x48), "", "", "", "\r\n\t5s", "", "", "x\ny", "", "")
	f.Add(uint8(1), uint8(0x00), "", "", "", "", "", "", "", "limits", "0")
	f.Add(uint8(1), uint8(0x00), "", "", "", "", "", "", "", "pg_temp", "0x10")
	f.Add(uint8(1), uint8(0x00), "", "", "", "", "", "", "", "", "-1")
	f.Add(uint8(1), uint8(0x14), "", "", "", "", "public", "7", "", "a-b", "65537")
	f.Add(uint8(0), uint8(0x00), "", "", "", "", "", "", "", "x\x1b[31m", "")
	f.Fuzz(func(t *testing.T, command, set uint8, batch, maxPasses, every, timeout, schema, rowsPerShard, extra, envSchemaValue, envRows string) {
		name := [...]string{"cleanup", "status", "migrate"}[int(command)%3]
		args := []string{name}
		usage := false
		// flagged adds --flag=value when its bit of set is on, and
		// reports whether it did.
		flagged := func(bit uint8, flag, value string) bool {
			if set&(1<<bit) == 0 {
				return false
			}
			args = append(args, "--"+flag+"="+value)
			return true
		}
		whole := func(v string) (int64, bool) {
			n, err := strconv.ParseInt(v, 0, strconv.IntSize)
			return n, err == nil
		}
		duration := func(v string) (time.Duration, bool) {
			d, err := time.ParseDuration(v)
			return d, err == nil
		}
		switch name {
		case "cleanup":
			if flagged(0, "batch", batch) {
				n, ok := whole(batch)
				usage = usage || !ok || n < 1
			}
			if flagged(1, "max-passes", maxPasses) {
				n, ok := whole(maxPasses)
				usage = usage || !ok || n < 1
			}
			if flagged(2, "every", every) {
				d, ok := duration(every)
				usage = usage || !ok || d < 0 || (d > 0 && d < time.Millisecond)
			}
			if flagged(3, "timeout", timeout) {
				d, ok := duration(timeout)
				usage = usage || !ok || d <= 0 || d > time.Minute
			}
		case "status":
			if flagged(2, "rows-per-shard", rowsPerShard) {
				n, ok := whole(rowsPerShard)
				usage = usage || !ok || n < 1 || n > 65536
			}
			if flagged(3, "timeout", timeout) {
				d, ok := duration(timeout)
				usage = usage || !ok || d <= 0 || d > time.Minute
			}
		case "migrate":
			if flagged(3, "timeout", timeout) {
				// PostgreSQL takes a session timeout of at most 2^31-1 ms.
				d, ok := duration(timeout)
				usage = usage || !ok || d <= 0 || d > math.MaxInt32*time.Millisecond
			}
		}
		if flagged(4, "schema", schema) {
			usage = usage || migrations.CheckSchema(schema) != nil
		} else if envSchemaValue != "" {
			// The service's variable, read as the service reads it.
			usage = usage || migrations.CheckSchema(envSchemaValue) != nil
		}
		if name == "status" && set&(1<<2) == 0 && envRows != "" {
			n, err := strconv.Atoi(envRows)
			usage = usage || err != nil || n < 0 || n > 65536
		}
		if flagged(5, "json", "true") {
			usage = usage || name != "status"
		}
		switch {
		case set&(1<<6) != 0:
			// An unexpected argument, after the flags.
			args = append(args, "x"+extra)
			usage = true
		case set&(1<<7) != 0:
			// A flag no command has.
			args = append(args, "--zz"+extra)
			usage = true
		}

		var stdout, stderr strings.Builder
		code := run(t.Context(), args, envOf(map[string]string{
			envDatabaseURL:  "postgres://runlimit@127.0.0.1:1/x?sslmode=disable&connect_timeout=5",
			envSchema:       envSchemaValue,
			envRowsPerShard: envRows,
		}), &stdout, &stderr)
		want := 1
		if usage {
			want = 2
		}
		require.Equal(t, want, code, "%q: %s", args, stderr.String())
		require.Empty(t, stdout.String(), "%q", args)
		require.NotEmpty(t, stderr.String(), "%q", args)
		for _, r := range stderr.String() {
			if r == utf8.RuneError || r == '\n' || r == '\t' {
				continue
			}
			require.False(t, r < 0x20 || r >= 0x7f && r < 0xa0, "%q: %U printed in %q", args, r, stderr.String())
		}
	})
}
