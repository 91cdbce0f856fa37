package wiring

import (
	"context"
	"fmt"
	"os"
	"strconv"

	"github.com/runlimit/runlimit/domain"
)

// keyHasher builds the key hasher from the secret's one source in cfg: the
// value, the function or the environment variable. Its errors name the
// source, never the secret.
func keyHasher(ctx context.Context, cfg Config) (domain.KeyHasher, error) {
	short := "fewer than " + strconv.Itoa(domain.MinSecretLength) + " bytes"
	switch {
	case !cfg.KeySecret.IsZero():
		hasher, err := domain.NewKeyHasher([]byte(cfg.KeySecret.Reveal()))
		if err != nil {
			// NewKeyHasher's only failure is a short secret; its text is
			// not passed on, in case a future one quotes more.
			return domain.KeyHasher{}, &ConfigError{Field: "KeySecret", Reason: "holds " + short}
		}
		return hasher, nil
	case cfg.KeySecretFunc != nil:
		secret, err := cfg.KeySecretFunc(ctx)
		if err != nil {
			return domain.KeyHasher{}, fmt.Errorf("runlimit: KeySecretFunc: %w", err)
		}
		hasher, err := domain.NewKeyHasher(secret)
		if err != nil {
			return domain.KeyHasher{}, &ConfigError{Field: "KeySecretFunc", Reason: "returned " + short}
		}
		return hasher, nil
	default:
		return secretHasher(cfg.SecretEnv)
	}
}

// secretHasher builds the key hasher from the environment variable env. Its
// errors name the variable, never its value, and not even the variable when
// its name could be the secret itself (see [envReason]).
func secretHasher(env string) (domain.KeyHasher, error) {
	secret, ok := os.LookupEnv(env)
	if !ok || secret == "" {
		// SecretEnv may be the default, which the host never set: say
		// what else provides a secret. A variable set but empty (an
		// unfilled template, a secret manager that returned nothing) is
		// said as such: "not set" would send the operator to the wrong
		// place.
		problem := "is not set"
		if ok {
			problem = "is set but empty"
		}
		return domain.KeyHasher{}, &ConfigError{Field: "SecretEnv", Reason: envReason(env, problem) +
			" (set it to a secret of at least " + strconv.Itoa(domain.MinSecretLength) + " bytes, or give Config.KeySecret or KeySecretFunc)"}
	}
	if spaced(secret) {
		return domain.KeyHasher{}, &ConfigError{Field: "SecretEnv", Reason: envReason(env, spacedReason)}
	}
	hasher, err := domain.NewKeyHasher([]byte(secret))
	if err != nil {
		return domain.KeyHasher{}, &ConfigError{Field: "SecretEnv",
			Reason: envReason(env, "holds fewer than "+strconv.Itoa(domain.MinSecretLength)+" bytes")}
	}
	return hasher, nil
}

// envReason says that the variable env has problem. A host that meant
// SecretEnv: "RUNLIMIT_KEY_SECRET" may have written the secret there
// instead (SecretEnv: os.Getenv(...)), whose variable is then unset: a
// name as long as a secret may be, or holding a byte that a portable
// variable name does not (letters, digits and underscores, not starting
// with a digit), is not repeated.
func envReason(env, problem string) string {
	portable := env != "" && len(env) < domain.MinSecretLength && (env[0] < '0' || env[0] > '9')
	for i := 0; portable && i < len(env); i++ {
		c := env[i]
		portable = c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
	}
	if portable {
		return "names environment variable " + env + ", which " + problem
	}
	return "names an environment variable which " + problem +
		"; its name is not repeated, as it may be the secret itself (SecretEnv holds the variable's name)"
}
