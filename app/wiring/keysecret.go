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
// errors name the variable, never its value.
func secretHasher(env string) (domain.KeyHasher, error) {
	secret, ok := os.LookupEnv(env)
	if !ok || secret == "" {
		return domain.KeyHasher{}, &ConfigError{Field: "SecretEnv",
			Reason: "names environment variable " + env + ", which is not set"}
	}
	hasher, err := domain.NewKeyHasher([]byte(secret))
	if err != nil {
		return domain.KeyHasher{}, &ConfigError{Field: "SecretEnv",
			Reason: "names environment variable " + env + ", which holds fewer than " +
				strconv.Itoa(domain.MinSecretLength) + " bytes"}
	}
	return hasher, nil
}
