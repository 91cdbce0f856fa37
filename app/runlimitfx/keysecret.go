package runlimitfx

import (
	"context"

	"go.uber.org/fx"

	"github.com/runlimit/runlimit/app/wiring"
)

// KeySecret is the key secret as a value of the fx graph, for a host whose
// secret comes from its own configuration or secret store (one that came
// back empty, wiring.NewSecret(""), is refused as a config error, never
// taken for absent):
//
//	fx.Provide(func(v *vault.Client) (runlimitfx.KeySecret, error) {
//		s, err := v.Read("runlimit/key-secret")
//		return runlimitfx.KeySecret{Secret: wiring.NewSecret(s)}, err
//	})
//
// It is a type of its own, so that it is never confused with another
// [wiring.Secret] of the graph such as a database URL. It prints as
// "[redacted]" under every printer, as a wiring.Secret does.
type KeySecret struct {
	wiring.Secret
}

// KeySecretFunc returns the key secret, as [wiring.Config].KeySecretFunc
// does, provided in the fx graph: the module calls it once, from its
// constructor, with a context that ends after fx.DefaultTimeout (15 s),
// as it does a Config's KeySecretFunc. fx gives constructors no context and no time
// limit: a secret store that never answers would otherwise hang fx.New.
type KeySecretFunc func(context.Context) ([]byte, error)

// secretTimeout bounds the context the module calls a KeySecretFunc with,
// the graph's or the Config's: fx's own default bound on a start or stop
// hook.
const secretTimeout = fx.DefaultTimeout

// boundedSecret returns f calling its source with a context that ends
// after secretTimeout, or nil for a nil f.
func boundedSecret(f func(context.Context) ([]byte, error)) func(context.Context) ([]byte, error) {
	if f == nil {
		return nil
	}
	return func(ctx context.Context) ([]byte, error) {
		ctx, cancel := context.WithTimeout(ctx, secretTimeout)
		defer cancel()
		return f(ctx)
	}
}

// keySecret completes cfg with the graph's key secret, when the graph
// provides one: the Config must then name no source of its own, as a
// secret taken from two places could differ between replicas.
func keySecret(cfg wiring.Config, secret KeySecret, source KeySecretFunc) (wiring.Config, error) {
	graph := !secret.IsZero()
	if source != nil {
		if graph {
			return cfg, &wiring.ConfigError{Field: "KeySecret", Reason: "has two sources in the fx graph: provide a runlimitfx.KeySecret or a runlimitfx.KeySecretFunc, not both"}
		}
		graph = true
	}
	if !graph {
		cfg.KeySecretFunc = boundedSecret(cfg.KeySecretFunc)
		return cfg, nil
	}
	if !cfg.KeySecret.IsZero() || cfg.KeySecretFunc != nil || cfg.SecretEnv != "" {
		return cfg, &wiring.ConfigError{Field: "KeySecret", Reason: "has two sources: the Config sets one and the fx graph provides another; keep one of them"}
	}
	cfg.KeySecret = secret.Secret
	cfg.KeySecretFunc = boundedSecret(source)
	return cfg, nil
}
