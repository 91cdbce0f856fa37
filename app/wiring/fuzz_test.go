package wiring_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/app/wiring"
	"github.com/runlimit/runlimit/internal/leakcheck"
)

// envReasons are the only reasons ConfigFromLookup gives, by variable: a
// reason never quotes the value it was given.
var envReasons = map[string][]string{
	wiring.EnvBackend:              {`is not "memory", "postgres" or "store"`},
	wiring.EnvDatabaseURL:          {spacedReason},
	wiring.EnvMigrate:              {"is not true or false"},
	wiring.EnvMemoryMaxKeys:        {"is not a whole number", tooLarge, "is negative, want at least 1"},
	wiring.EnvMemoryShards:         {"is not a whole number", tooLarge, negativeOrDefault, "is more than 65536"},
	wiring.EnvGateMaxKeys:          {"is not a whole number", tooLarge, "is negative, want at least 1", "is below 1"},
	wiring.EnvGateShards:           {"is not a whole number", tooLarge, negativeOrDefault, "is more than 65536", "is set without " + wiring.EnvGateMaxKeys},
	wiring.EnvPostgresRowsPerShard: {"is not a whole number", tooLarge, negativeOrDefault, "is more than 65536"},
	wiring.EnvPostgresSchema:       {"is not a schema name Runlimit can use: 1 to 63 ASCII letters, digits and underscores, not starting with a digit or pg_"},
	wiring.EnvPostgresProtocol:     {`is not "locked" or "optimistic"`},
	wiring.EnvCleanupInterval:      {`is not a duration such as "30s" or "1m"`, "is shorter than 1ms (negative turns the loop off)"},
	wiring.EnvCleanupBatch:         {"is not a whole number", tooLarge, negativeOrDefault},
	wiring.EnvKeySecret:            {"holds fewer than 32 bytes", spacedReason},
}

// Reasons that several variables share.
const (
	tooLarge          = "is too large for a whole number"
	negativeOrDefault = "is negative, want at least 1 (0 keeps the default)"
	spacedReason      = "begins or ends with whitespace (a newline left by the file it came from?): remove it, " +
		"as a secret read with it on one replica and without it on another would give them different keys or databases"
)

// noTime drops the time from a log line, which would otherwise differ
// between two printings.
var noTime = &slog.HandlerOptions{ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
	if a.Key == slog.TimeKey {
		return slog.Attr{}
	}
	return a
}}

// FuzzConfigFromLookup reads an environment of any values and requires
// that every error is an [*wiring.EnvError] naming a variable with one of
// its fixed reasons (so no value is ever quoted), that a value accepted is
// the one the standard parsers read, and that printing the config spells
// neither the key secret nor the database URL.
func FuzzConfigFromLookup(f *testing.F) {
	f.Add("memory", "", "true", "100", "4", "", "", "", "public", "locked", "30s", "1000", testSecret)
	f.Add("postgres", "postgres://app:S3cr3t-pa55w0rd@db/app", "1", " 10", "+4", "8", "2", "-1", "pg_temp", "Optimistic", "1.5h", "0x10", "short")
	f.Add("Memory", "host=db password=S3cr3t-pa55w0rd", "yes", "9223372036854775808", "٣", "", "2", "1e3", "1abc", "", "-5m", "", strings.Repeat("\xff", 40))
	f.Add("", "", "", "", "", "x", "", "", "", "", "", "", "")
	f.Fuzz(func(t *testing.T, backend, dbURL, migrate, maxKeys, shards, gateKeys, gateShards, rows, schema, protocol, interval, batch, secret string) {
		env := map[string]string{
			wiring.EnvBackend: backend, wiring.EnvDatabaseURL: dbURL, wiring.EnvMigrate: migrate,
			wiring.EnvMemoryMaxKeys: maxKeys, wiring.EnvMemoryShards: shards, wiring.EnvGateMaxKeys: gateKeys,
			wiring.EnvGateShards: gateShards, wiring.EnvPostgresRowsPerShard: rows, wiring.EnvPostgresSchema: schema,
			wiring.EnvPostgresProtocol: protocol, wiring.EnvCleanupInterval: interval, wiring.EnvCleanupBatch: batch,
			wiring.EnvKeySecret: secret,
		}
		cfg, err := wiring.ConfigFromLookup(func(name string) (string, bool) {
			v, ok := env[name]
			return v, ok
		})
		bad := map[string]bool{}
		if err != nil {
			require.ErrorIs(t, err, wiring.ErrInvalidConfig)
			var parts []error
			if j, ok := err.(interface{ Unwrap() []error }); ok {
				parts = j.Unwrap()
			} else {
				parts = []error{err}
			}
			for _, part := range parts {
				var envErr *wiring.EnvError
				require.True(t, errors.As(part, &envErr), "%T: %v", part, part)
				require.Contains(t, envReasons[envErr.Var], envErr.Reason, envErr.Var)
				require.Equal(t, "runlimit: invalid environment: "+envErr.Var+" "+envErr.Reason, part.Error())
				bad[envErr.Var] = true
			}
		}
		whole := func(name string, got int) {
			v := env[name]
			if v == "" || bad[name] {
				return
			}
			n, err := strconv.Atoi(v)
			require.NoError(t, err, name)
			require.Equal(t, n, got, name)
		}
		whole(wiring.EnvMemoryMaxKeys, cfg.Memory.MaxKeys)
		whole(wiring.EnvMemoryShards, cfg.Memory.Shards)
		whole(wiring.EnvPostgresRowsPerShard, cfg.Postgres.RowsPerShard)
		whole(wiring.EnvCleanupBatch, cfg.CleanupBatch)
		if cfg.Gate != nil {
			whole(wiring.EnvGateMaxKeys, cfg.Gate.MaxKeys)
			whole(wiring.EnvGateShards, cfg.Gate.Shards)
		} else {
			require.Empty(t, gateKeys)
		}
		if migrate != "" && !bad[wiring.EnvMigrate] {
			b, err := strconv.ParseBool(migrate)
			require.NoError(t, err)
			require.Equal(t, b, cfg.Migrate)
		}
		if interval != "" && !bad[wiring.EnvCleanupInterval] {
			d, err := time.ParseDuration(interval)
			require.NoError(t, err)
			require.Equal(t, d, cfg.CleanupInterval)
		}
		require.Equal(t, dbURL, cfg.DatabaseURL.Reveal())
		if len(secret) >= 32 && !bad[wiring.EnvKeySecret] {
			require.Equal(t, secret, cfg.KeySecret.Reveal())
		} else {
			require.True(t, cfg.KeySecret.IsZero())
		}

		// Config holds functions, which encoding/json refuses: fmt and
		// log/slog are how a host prints it.
		var logged bytes.Buffer
		slog.New(slog.NewJSONHandler(&logged, noTime)).Info("config", "cfg", cfg)
		printed := []string{fmt.Sprintf("%v %+v %#v", cfg, cfg, cfg), logged.String()}
		if err != nil {
			printed = append(printed, err.Error(), fmt.Sprintf("%+v", err))
		}
		// Every value but these two may be printed: the config holds it
		// in the clear. A window of the two that another value or the
		// printing's own text spells is no leak.
		others := strings.Join([]string{backend, migrate, maxKeys, shards, gateKeys, gateShards, rows, schema, protocol, interval, batch}, "\x00")
		var blank bytes.Buffer
		slog.New(slog.NewJSONHandler(&blank, noTime)).Info("config", "cfg", wiring.Config{})
		others += fmt.Sprintf("%v %+v %#v", wiring.Config{}, wiring.Config{}, wiring.Config{}) + blank.String()
		for _, s := range []string{secret, dbURL} {
			if len(s) < leakcheck.Window {
				continue
			}
			for _, bad := range leakcheck.Renderings([]byte(s)) {
				if strings.Contains(others, bad) {
					continue
				}
				for _, p := range printed {
					require.NotContains(t, p, bad)
				}
			}
		}
	})
}

// FuzzNewNeverPrintsDatabasePassword hands New a database URL or
// keyword/value string holding a password of any bytes, written as an
// operator might, and a SecretEnv of any name; New opens nothing, and its
// error (a config error, or none) spells no window of the password, nor
// the SecretEnv name when that name could be a secret.
func FuzzNewNeverPrintsDatabasePassword(f *testing.F) {
	for _, pw := range []string{
		"S3cr3t-pa55w0rd", "Qz@k3v/Wp", "Qz k3v=Wp", "Qz?k3v&Wp", "Qz%k3v#Wp", "Qz'k3v\\Wp", "Qzé€k3v\x01",
		"5433/Qzk3v@db", "Qz:k3v", "Qz&user=k3v",
	} {
		for form := range uint8(6) {
			f.Add(pw, form, "")
		}
	}
	f.Add("S3cr3t-pa55w0rd", uint8(0), "RUNLIMIT_NO_SUCH_VAR")
	f.Add("S3cr3t-pa55w0rd", uint8(0), strings.Repeat("k", 40))
	f.Fuzz(func(t *testing.T, pw string, form uint8, secretEnv string) {
		if len(pw) < leakcheck.Window || len(pw) > 64 || strings.ContainsRune(secretEnv, 0) || strings.ContainsRune(secretEnv, '=') {
			return
		}
		dsn := func(pw string) string {
			switch form % 6 {
			case 0:
				return "postgres://app:" + pw + "@db.invalid:5432/app"
			case 1:
				return (&url.URL{Scheme: "postgres", User: url.UserPassword("app", pw), Host: "db.invalid", Path: "/app"}).String()
			case 2:
				return "postgres://app@db.invalid/app?sslmode=disable&password=" + pw
			case 3:
				return "host=db.invalid user=app password=" + pw + " dbname=app"
			case 4:
				return "host=db.invalid user= password=" + pw
			default:
				return "postgresql://app:" + pw + "@h1.invalid,h2.invalid:5433/app?application_name=x"
			}
		}
		newErr := func(pw string) (string, bool) {
			cfg := wiring.Config{DatabaseURL: wiring.NewSecret(dsn(pw)), SecretEnv: secretEnv}
			if secretEnv == "" {
				cfg.KeySecret = wiring.NewSecret(testSecret)
			}
			r, err := wiring.New(context.Background(), cfg)
			if err == nil {
				require.NoError(t, r.Close(context.Background()))
				return "", false
			}
			js, _ := json.Marshal(err)
			return fmt.Sprintf("%v\x00%+v\x00%#v\x00%s", err, err, err, js), true
		}
		got, failed := newErr(pw)
		if !failed {
			return
		}
		baseline, _ := newErr(strings.Repeat("J", len(pw)))
		for _, bad := range leakcheck.Renderings([]byte(pw)) {
			if !strings.Contains(baseline, bad) {
				require.NotContains(t, got, bad, "%q", dsn(pw))
			}
		}
		if len(secretEnv) >= 32 {
			require.NotContains(t, got, secretEnv)
		}
	})
}
