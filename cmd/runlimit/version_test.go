package main

import (
	"bytes"
	"context"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestVersion(t *testing.T) {
	t.Parallel()
	vcs := []debug.BuildSetting{
		{Key: "vcs", Value: "git"},
		{Key: "vcs.revision", Value: "0123456789abcdef0123456789abcdef01234567"},
		{Key: "vcs.time", Value: "2026-11-30T12:00:00Z"},
		{Key: "vcs.modified", Value: "true"},
	}
	tests := []struct {
		name string
		info *debug.BuildInfo
		ok   bool
		want string
	}{
		{"installed release", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: "github.com/runlimit/runlimit", Version: "v0.2.0"}},
			true, "runlimit v0.2.0, built with go1.26.8"},
		{"checkout with VCS", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: "github.com/runlimit/runlimit", Version: "(devel)"}, Settings: vcs},
			true, "runlimit (devel), revision 0123456789abcdef0123456789abcdef01234567 of 2026-11-30T12:00:00Z, modified, built with go1.26.8"},
		{"no version recorded", &debug.BuildInfo{Main: debug.Module{Path: "github.com/runlimit/runlimit"}}, true, "runlimit (devel)"},
		{"no build information", nil, false, "runlimit (devel), no build information"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.want, version(tt.info, tt.ok))
		})
	}
}

// TestVersionCommand: "version" and "--version" print this binary's build
// information, as debug.ReadBuildInfo reports it, and exit 0.
func TestVersionCommand(t *testing.T) {
	t.Parallel()
	want := version(debug.ReadBuildInfo())
	require.True(t, strings.HasPrefix(want, "runlimit "), want)
	for _, arg := range []string{"version", "--version", "-version"} {
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), []string{arg}, func(string) string { return "" }, &stdout, &stderr)
		require.Equal(t, 0, code, arg)
		require.Equal(t, want+"\n", stdout.String(), arg)
		require.Empty(t, stderr.String(), arg)
	}
}
