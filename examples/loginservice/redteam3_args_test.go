package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestCommandLineNeverEchoesWhatWasGiven: a database URL or a secret put
// in the wrong place on the command line, a stray argument or the value of
// the wrong flag, was quoted back by the error the service exits with and
// by the flag package's own message on stderr. Both now name the flag or
// the argument's position, never its text.
func TestCommandLineNeverEchoesWhatWasGiven(t *testing.T) {
	t.Parallel()
	const password = "Zq9Kx7Wv3Lm2"
	url := "postgres://app:" + password + "@db.example/app"
	for name, tc := range map[string]struct {
		args []string
		want string
	}{
		"stray argument":            {[]string{url}, "unexpected argument 1"},
		"stray after flags":         {[]string{"-identity-limit", "3", url}, "unexpected argument 3"},
		"duration flag":             {[]string{"-window", url}, "invalid value for flag -window"},
		"integer flag, equals form": {[]string{"-network-limit=host=db password=" + password}, "invalid value for flag -network-limit"},
		"trusted proxies":           {[]string{"-trusted-proxies", "10.0.0.0/8," + url}, "-trusted-proxies: entry 2"},
		"bad flag syntax":           {[]string{"---" + url}, "bad flag syntax"},
		"unknown flag named by it":  {[]string{"-" + url}, "flag provided but not defined"},
		"unknown flag, equals form": {[]string{"--database-url=" + url}, "flag provided but not defined: -database-url"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var stderr bytes.Buffer
			err := run(context.Background(), tc.args, env(map[string]string{"RUNLIMIT_KEY_SECRET": testSecret}), &stderr, nil)
			require.Error(t, err)
			require.False(t, errors.Is(err, flag.ErrHelp))
			require.Contains(t, err.Error(), tc.want)
			require.NotContains(t, err.Error(), password)
			require.NotContains(t, stderr.String(), password)
		})
	}
}
