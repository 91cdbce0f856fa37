package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/adapters/httplimit"
	"github.com/runlimit/runlimit/app/wiring"
	"github.com/runlimit/runlimit/examples/loginservice/login"
)

const testSecret = "Kx7-Qm2-Zr9-Wp4-Ht6-Jn8-Vb3-Fd5-Ls1"

func env(vars map[string]string) func(string) (string, bool) {
	return func(name string) (string, bool) {
		v, ok := vars[name]
		return v, ok
	}
}

// TestParseSettings: the flags over the LOGIN_* variables over the
// defaults, and the RUNLIMIT_* variables for the runtime.
func TestParseSettings(t *testing.T) {
	t.Parallel()
	t.Run("defaults", func(t *testing.T) {
		t.Parallel()
		s, err := parseSettings(nil, env(nil), io.Discard)
		require.NoError(t, err)
		require.Equal(t, "127.0.0.1:8080", s.addr)
		require.Equal(t, login.DefaultLimits, s.config.Limits)
		require.Equal(t, httplimit.ClientConfig{}, s.config.Clients, "no forwarding header is read by default")
		require.True(t, s.ephemeralSecret, "on memory, a missing secret is generated")
		require.False(t, s.config.Runtime.KeySecret.IsZero())
	})
	t.Run("environment and flags", func(t *testing.T) {
		t.Parallel()
		s, err := parseSettings(
			[]string{"-addr", "127.0.0.1:0", "-identity-limit", "3", "-trial-limit", "-1", "-proxy-header", "forwarded"},
			env(map[string]string{
				"LOGIN_ADDR":            "0.0.0.0:9999",
				"LOGIN_TRUSTED_PROXIES": "10.0.0.0/8, 192.0.2.1/32",
				"RUNLIMIT_KEY_SECRET":   testSecret,
			}), io.Discard)
		require.NoError(t, err)
		require.Equal(t, "127.0.0.1:0", s.addr, "a flag wins over its variable")
		require.Equal(t, int64(3), s.config.Limits.Identity)
		require.Equal(t, int64(-1), s.config.Limits.Trial)
		require.Equal(t, httplimit.ClientConfig{
			TrustedProxies: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("192.0.2.1/32")},
			Header:         httplimit.ForwardedHeader,
		}, s.config.Clients)
		require.False(t, s.ephemeralSecret)
		require.Equal(t, testSecret, s.config.Runtime.KeySecret.Reveal())
	})
	t.Run("a database needs the secret", func(t *testing.T) {
		t.Parallel()
		_, err := parseSettings(nil, env(map[string]string{"RUNLIMIT_DATABASE_URL": "postgres://db.invalid/app"}), io.Discard)
		var envErr *wiring.EnvError
		require.ErrorAs(t, err, &envErr)
		require.Equal(t, wiring.EnvKeySecret, envErr.Var)
	})
	for name, args := range map[string][]string{
		"bad network":     {"-trusted-proxies", "10.0.0.0/33"},
		"bad header":      {"-trusted-proxies", "10.0.0.0/8", "-proxy-header", "x-real-ip"},
		"bad level":       {"-log-level", "loud"},
		"an argument":     {"serve"},
		"an unknown flag": {"-port", "80"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, err := parseSettings(args, env(nil), io.Discard)
			require.Error(t, err)
		})
	}
	t.Run("help", func(t *testing.T) {
		t.Parallel()
		var usage bytes.Buffer
		_, err := parseSettings([]string{"-h"}, env(nil), &usage)
		require.ErrorIs(t, err, flag.ErrHelp)
		require.Contains(t, usage.String(), "RUNLIMIT_DATABASE_URL")
		require.Contains(t, usage.String(), "-trusted-proxies")
	})
}

// TestRun: the command serves logins and its metrics until its context
// ends, then stops cleanly; its log says where it listens, and neither
// the log nor the metrics hold what a login sent.
func TestRun(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	addrs := make(chan net.Addr, 1)
	done := make(chan error, 1)
	var stderr bytes.Buffer
	go func() {
		done <- run(ctx, []string{"-addr", "127.0.0.1:0", "-log-level", "debug"},
			env(map[string]string{"RUNLIMIT_KEY_SECRET": testSecret}), &stderr, func(a net.Addr) { addrs <- a })
	}()
	var base string
	select {
	case a := <-addrs:
		base = "http://" + a.String()
	case err := <-done:
		t.Fatalf("run returned before listening: %v", err)
	}
	form := url.Values{"identity": {login.DemoIdentity}, "password": {login.DemoPassword}}
	resp, err := http.PostForm(base+"/login", form)
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "{\"status\":\"ok\"}\n", string(body))
	require.Equal(t, `"login/identity";q=5;w=60, "login.trial/network";q=10;w=60, "login/client";q=20;w=60, "login.gate/network";q=60;w=60`,
		resp.Header.Get(httplimit.HeaderRateLimitPolicy))

	// The command serves the runtime's metrics beside /login.
	resp, err = http.Get(base + "/metrics")
	require.NoError(t, err)
	metrics, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, string(metrics),
		`runlimit_admissions_total{runlimit_limiter="memory",runlimit_outcome="allowed",runlimit_policy_id="login",runlimit_policy_scope="identity"} 1`+"\n")
	for _, sent := range []string{login.DemoIdentity, login.DemoPassword, testSecret} {
		require.NotContains(t, string(metrics), sent)
	}

	cancel()
	require.NoError(t, <-done)
	log := stderr.String()
	require.Contains(t, log, `msg="loginservice: listening"`)
	require.Contains(t, log, "backend=memory")
	require.Contains(t, log, `msg="runlimit: stopped"`)
	for _, sent := range []string{login.DemoIdentity, login.DemoPassword, testSecret} {
		require.NotContains(t, log, sent)
	}
	require.False(t, strings.Contains(log, "RUNLIMIT_KEY_SECRET is not set"), "the secret was set")
}

// TestRunFailsToStart: an address that cannot be listened on, and a
// database that does not answer, end run with an error.
func TestRunFailsToStart(t *testing.T) {
	t.Parallel()
	err := run(context.Background(), []string{"-addr", "256.0.0.1:0"}, env(map[string]string{"RUNLIMIT_KEY_SECRET": testSecret}), io.Discard, nil)
	require.Error(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := ln.Addr().(*net.TCPAddr).Port
	require.NoError(t, ln.Close())
	err = run(context.Background(), []string{"-addr", "127.0.0.1:0"}, env(map[string]string{
		"RUNLIMIT_KEY_SECRET":   testSecret,
		"RUNLIMIT_DATABASE_URL": fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", port),
	}), io.Discard, nil)
	var notReady *wiring.NotReadyError
	require.True(t, errors.As(err, &notReady), "%v", err)
}
