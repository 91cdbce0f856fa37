package readme_test

import (
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// apacheSHA256 is the digest of the Apache License 2.0 as the Apache
// Software Foundation publishes it. pkg.go.dev detects a license by file name
// and text, and hides a module's documentation when it cannot: the text must
// stay exactly as published.
const apacheSHA256 = "cfc7749b96f63bd31c3c42b5c471bf756814053e847c10f3eb003417bc523d30"

// TestLicenses holds the project to its dual license, MIT or Apache-2.0 at
// the user's option, in files under names pkg.go.dev looks for.
func TestLicenses(t *testing.T) {
	t.Parallel()
	apache, err := os.ReadFile("../../LICENSE-APACHE")
	require.NoError(t, err)
	sum := sha256.Sum256(apache)
	require.Equal(t, apacheSHA256, hex.EncodeToString(sum[:]), "LICENSE-APACHE must be the unmodified Apache License 2.0")

	mit, err := os.ReadFile("../../LICENSE-MIT")
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(string(mit), "MIT License\n\nCopyright (c) "), "LICENSE-MIT starts with the MIT title and a copyright line")
	require.Contains(t, string(mit), "Permission is hereby granted, free of charge, to any person obtaining a copy\nof this software")
	require.Contains(t, string(mit), "THE SOFTWARE IS PROVIDED \"AS IS\", WITHOUT WARRANTY OF ANY KIND")

	readme, err := os.ReadFile("../../README.md")
	require.NoError(t, err)
	require.Contains(t, string(readme), "[LICENSE-APACHE](LICENSE-APACHE)")
	require.Contains(t, string(readme), "[LICENSE-MIT](LICENSE-MIT)")
}

// TestEveryModuleIsLicensed: pkg.go.dev reads a module's licenses from its
// own zip, which holds only the module's directory, so a module nested in
// the repository (the login example, the benchmarks) shows no documentation without
// license files of its own: the root's, unchanged.
func TestEveryModuleIsLicensed(t *testing.T) {
	t.Parallel()
	apache, err := os.ReadFile("../../LICENSE-APACHE")
	require.NoError(t, err)
	mit, err := os.ReadFile("../../LICENSE-MIT")
	require.NoError(t, err)
	var nested []string
	err = filepath.WalkDir("../..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && strings.HasPrefix(d.Name(), ".") && path != "../.." {
			return filepath.SkipDir
		}
		if d.Name() == "go.mod" && filepath.Dir(path) != "../.." {
			nested = append(nested, filepath.Dir(path))
		}
		return nil
	})
	require.NoError(t, err)
	require.Contains(t, nested, "../../examples/loginservice")
	require.Contains(t, nested, "../../benchmarks")
	for _, dir := range nested {
		got, err := os.ReadFile(filepath.Join(dir, "LICENSE-APACHE"))
		require.NoError(t, err, "%s is a module of its own: copy the root's license files into it", dir)
		require.Equal(t, string(apache), string(got), "%s/LICENSE-APACHE must be the root's", dir)
		got, err = os.ReadFile(filepath.Join(dir, "LICENSE-MIT"))
		require.NoError(t, err, "%s is a module of its own: copy the root's license files into it", dir)
		require.Equal(t, string(mit), string(got), "%s/LICENSE-MIT must be the root's", dir)
	}
}
