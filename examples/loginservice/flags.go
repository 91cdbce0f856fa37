package main

import (
	"crypto/rand"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"regexp"
	"strings"

	"github.com/runlimit/runlimit/adapters/httplimit"
	"github.com/runlimit/runlimit/app/wiring"
	"github.com/runlimit/runlimit/examples/loginservice/login"
)

// settings are what the command line and the environment say.
type settings struct {
	addr   string
	level  slog.Level
	config login.Config
	// ephemeralSecret says the key secret was generated for this process:
	// no RUNLIMIT_KEY_SECRET was set and the quota is in memory, where it
	// does not outlive the process anyway.
	ephemeralSecret bool
}

// Environment variables of the service's own flags. The runtime reads
// RUNLIMIT_* (wiring.ConfigFromEnv): RUNLIMIT_DATABASE_URL selects
// PostgreSQL, RUNLIMIT_KEY_SECRET is the key secret.
const (
	envAddr           = "LOGIN_ADDR"
	envTrustedProxies = "LOGIN_TRUSTED_PROXIES"
	envProxyHeader    = "LOGIN_PROXY_HEADER"
)

// parseSettings reads the flags in args over the environment that lookup
// reads: a flag given on the command line wins over its variable.
func parseSettings(args []string, lookup func(string) (string, bool), usage io.Writer) (settings, error) {
	var (
		s       settings
		proxies string
		header  string
		limits  login.Limits
		level   string
	)
	fs := flag.NewFlagSet("loginservice", flag.ContinueOnError)
	// The flag package prints the error it returns, and that quotes the
	// value it rejects, which may be a database URL or a secret put in
	// the wrong place: only the usage is printed, and the error returned
	// names the flag alone (flagError).
	fs.SetOutput(io.Discard)
	fs.Usage = func() {
		fmt.Fprintf(usage, "Usage: loginservice [flags]\n\n"+
			"A login endpoint behind Runlimit. It keeps its quota in memory, or in\n"+
			"PostgreSQL with a memory gate in front when RUNLIMIT_DATABASE_URL is set;\n"+
			"the other RUNLIMIT_* variables of the README apply as well.\n\nFlags:\n")
		fs.SetOutput(usage)
		fs.PrintDefaults()
		fs.SetOutput(io.Discard)
	}
	fs.StringVar(&s.addr, "addr", "127.0.0.1:8080", "listen on `host:port` ("+envAddr+")")
	fs.StringVar(&proxies, "trusted-proxies", "", "comma-separated `networks` of the reverse proxies in front, such as 10.0.0.0/8; default none: forwarding headers are never read ("+envTrustedProxies+")")
	fs.StringVar(&header, "proxy-header", "x-forwarded-for", "the `header` the trusted proxies write: x-forwarded-for or forwarded ("+envProxyHeader+")")
	d := login.DefaultLimits
	fs.Int64Var(&limits.Network, "network-limit", d.Network, "login attempts per client network per window, on the memory gate, before the body is read")
	fs.Int64Var(&limits.Trial, "trial-limit", d.Trial, "a stricter per-network limit in shadow mode, logged but never enforced; negative: none")
	fs.Int64Var(&limits.Client, "client-limit", d.Client, "login attempts per client network per window, in the shared quota")
	fs.Int64Var(&limits.Identity, "identity-limit", d.Identity, "login attempts per identity per window, in the shared quota")
	fs.DurationVar(&limits.Window, "window", d.Window, "the `window` of every limit")
	fs.StringVar(&level, "log-level", "info", "debug, info, warn or error")
	for name, env := range map[string]string{"addr": envAddr, "trusted-proxies": envTrustedProxies, "proxy-header": envProxyHeader} {
		if v, ok := lookup(env); ok && v != "" {
			if err := fs.Set(name, v); err != nil {
				return s, fmt.Errorf("%s: %w", env, err)
			}
		}
	}
	if err := fs.Parse(args); err != nil {
		return s, flagError(err)
	}
	if fs.NArg() > 0 {
		// Not quoted: a stray argument is often a database URL.
		return s, fmt.Errorf("unexpected argument %d: loginservice takes flags only (the database URL goes in %s)",
			len(args)-fs.NArg()+1, wiring.EnvDatabaseURL)
	}
	if err := s.level.UnmarshalText([]byte(level)); err != nil {
		return s, errors.New("-log-level: want debug, info, warn or error")
	}
	clients, err := parseClients(proxies, header)
	if err != nil {
		return s, err
	}

	dbURL, _ := lookup(wiring.EnvDatabaseURL)
	backend, _ := lookup(wiring.EnvBackend)
	onMemory := dbURL == "" && (backend == "" || backend == string(wiring.BackendMemory))
	var generated string
	rt, err := wiring.ConfigFromLookup(func(name string) (string, bool) {
		v, ok := lookup(name)
		if name == wiring.EnvKeySecret && v == "" && onMemory {
			generated = rand.Text() + rand.Text()
			return generated, true
		}
		return v, ok
	})
	if err != nil {
		return s, err
	}
	if !onMemory && rt.KeySecret.IsZero() {
		// Counters in a database outlive the process: a generated secret
		// would give every restart new keys.
		return s, &wiring.EnvError{Var: wiring.EnvKeySecret, Reason: "is not set: a database needs the same key secret on every replica and every restart"}
	}
	s.ephemeralSecret = generated != ""
	s.config = login.Config{Runtime: rt, Limits: limits, Clients: clients}
	return s, nil
}

// parseClients reads the trusted proxies and their header.
func parseClients(proxies, header string) (httplimit.ClientConfig, error) {
	var c httplimit.ClientConfig
	if proxies == "" {
		return c, nil
	}
	for _, f := range strings.Split(proxies, ",") {
		p, err := netip.ParsePrefix(strings.TrimSpace(f))
		if err != nil {
			// The entry is not quoted: a value given to the wrong flag or
			// variable may be a database URL.
			return c, fmt.Errorf("-trusted-proxies: entry %d is not a network such as 10.0.0.0/8", len(c.TrustedProxies)+1)
		}
		c.TrustedProxies = append(c.TrustedProxies, p)
	}
	switch strings.ToLower(header) {
	case "x-forwarded-for":
		c.Header = httplimit.XForwardedForHeader
	case "forwarded":
		c.Header = httplimit.ForwardedHeader
	default:
		return c, errors.New("-proxy-header: want x-forwarded-for or forwarded")
	}
	return c, nil
}

// The texts of the flag package's errors that quote what was given: a
// rejected value, an argument that is no flag, an unknown flag's name.
var (
	flagValue   = regexp.MustCompile(`invalid (boolean )?value ".*" for flag`)
	flagSyntax  = regexp.MustCompile(`bad flag syntax: .*`)
	flagUnknown = regexp.MustCompile(`flag provided but not defined: -(.*)`)
	flagName    = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)
)

// flagError is err, an error of the flag package, without the text given
// on the command line that it quotes, which may be a database URL or a
// secret put in the wrong place: a rejected value is left out, and so is
// an unknown flag's name unless it looks like one. ErrHelp is returned as
// it is.
func flagError(err error) error {
	if errors.Is(err, flag.ErrHelp) {
		return err
	}
	text := flagValue.ReplaceAllString(err.Error(), "invalid ${1}value for flag")
	text = flagSyntax.ReplaceAllLiteralString(text, "bad flag syntax (the argument is not repeated)")
	if m := flagUnknown.FindStringSubmatch(text); m != nil && !flagName.MatchString(m[1]) {
		text = "flag provided but not defined (its name is not repeated)"
	}
	return errors.New(text)
}
