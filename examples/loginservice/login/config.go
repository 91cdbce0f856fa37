package login

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/runlimit/runlimit/adapters/httplimit"
	"github.com/runlimit/runlimit/adapters/memory"
	"github.com/runlimit/runlimit/app/wiring"
)

// Defaults of a [Config].
const (
	// DefaultMaxKeys sizes the memory store, and the memory gate in front of
	// PostgreSQL, when their MaxKeys is zero.
	DefaultMaxKeys = 100_000
	// DefaultShards is the shard count of the memory store and the gate when
	// theirs is zero.
	DefaultShards = 16
	// DefaultMaxBodyBytes is [Config.MaxBodyBytes] when it is zero.
	DefaultMaxBodyBytes = 4 << 10
)

// Config describes the login service. Only the runtime's key secret is
// required (Runtime.KeySecret, or the RUNLIMIT_KEY_SECRET variable that
// wiring reads when none is set); everything else has a default.
type Config struct {
	// Runtime is Runlimit's runtime: where the quota is kept and the key
	// secret. With neither a DatabaseURL nor a Pool it keeps every counter
	// in a memory store (Backend memory, sized DefaultMaxKeys and
	// DefaultShards when Memory is zero). With a DatabaseURL or a Pool and
	// no Backend, it uses PostgreSQL for the shared client and identity
	// quota, with a memory gate in front for the client-network limits
	// (Gate, sized as the memory store when nil). Default: the zero
	// wiring.Config, completed as said.
	Runtime wiring.Config
	// Limits are the service's policies. Default: see [Limits].
	Limits Limits
	// Clients says how the client of a request is found: by default the
	// peer of the connection, reading no forwarding header. Set
	// TrustedProxies and Header when the service runs behind reverse
	// proxies. Default: the zero httplimit.ClientConfig.
	Clients httplimit.ClientConfig
	// MaxBodyBytes bounds the body of a login request; a longer one gets
	// 413. Default 4096 ([DefaultMaxBodyBytes]).
	MaxBodyBytes int64
	// Users are the accounts a login is checked against. Default
	// [DemoUsers].
	Users *Users
	// Logger receives the service's records, the runtime's when
	// Runtime.Logger is nil, and net/http's error log at warning level.
	// No record holds an identity, a client address or a password: a
	// handler's panic is logged by the service, by route, panic and
	// stack, and its response aborted, so that net/http, whose record
	// names the peer, logs none. Default: slog.Default().
	Logger *slog.Logger
}

// DefaultLimits are the limits a zero [Limits] field takes.
var DefaultLimits = Limits{Network: 60, Trial: 10, Client: 20, Identity: 5, Window: time.Minute}

// Limits are the attempts a client network, a client and an identity may
// make per Window. Zero means the value in [DefaultLimits].
type Limits struct {
	// Network is the attempts per client network that the middleware lets
	// through before the body is read, on the memory gate (or the memory
	// store). It bounds what a spray costs before any parsing or database
	// round trip. Default 60.
	Network int64
	// Trial is a stricter per-network limit in shadow mode, checked by a
	// second middleware: it never refuses a request, but the RateLimit
	// fields show r=0 and the service logs each request it would have
	// refused, so that its effect can be watched before it is enforced.
	// Negative leaves it out. Default 10.
	Trial int64
	// Client is the attempts per client network in the shared quota,
	// checked with Identity as one batch once the body is parsed. Default
	// 20.
	Client int64
	// Identity is the attempts per account identity in the shared quota,
	// whatever network they come from. Default 5.
	Identity int64
	// Window is the window of every limit. Default 1 minute.
	Window time.Duration
}

// withDefaults fills in cfg's defaults and checks what the service itself
// needs; the runtime, the client config and the policies check the rest
// when they are built.
func (cfg Config) withDefaults() (Config, error) {
	rt := &cfg.Runtime
	hasDatabase := !rt.DatabaseURL.IsZero() || !rt.Pool.IsZero()
	if rt.Backend == "" && hasDatabase {
		// wiring would otherwise choose memory and never use the URL.
		rt.Backend = wiring.BackendPostgres
	}
	switch rt.Backend {
	case "", wiring.BackendMemory:
		rt.Memory = sized(rt.Memory)
	case wiring.BackendPostgres:
		gate := memory.Config{}
		if rt.Gate != nil {
			gate = *rt.Gate
		}
		gate = sized(gate)
		rt.Gate = &gate
	default:
		return cfg, fmt.Errorf("login: invalid config: Runtime.Backend %q: the service runs on %q or %q", rt.Backend, wiring.BackendMemory, wiring.BackendPostgres)
	}
	l := &cfg.Limits
	for _, f := range []struct {
		name string
		v    *int64
		def  int64
	}{
		{"Network", &l.Network, DefaultLimits.Network},
		{"Trial", &l.Trial, DefaultLimits.Trial},
		{"Client", &l.Client, DefaultLimits.Client},
		{"Identity", &l.Identity, DefaultLimits.Identity},
	} {
		if *f.v == 0 {
			*f.v = f.def
		}
		if *f.v < 0 && f.name != "Trial" {
			return cfg, fmt.Errorf("login: invalid config: Limits.%s is %d, want at least 1 (0 means %d)", f.name, *f.v, f.def)
		}
	}
	if l.Window == 0 {
		l.Window = DefaultLimits.Window
	}
	switch {
	case cfg.MaxBodyBytes == 0:
		cfg.MaxBodyBytes = DefaultMaxBodyBytes
	case cfg.MaxBodyBytes < 0:
		return cfg, errors.New("login: invalid config: MaxBodyBytes is negative")
	}
	if cfg.Users == nil {
		cfg.Users = DemoUsers()
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return cfg, nil
}

// sized gives a memory config without a size the service's default size.
func sized(c memory.Config) memory.Config {
	if c.MaxKeys == 0 {
		c.MaxKeys = DefaultMaxKeys
		if c.Shards == 0 {
			c.Shards = DefaultShards
		}
	}
	return c
}
