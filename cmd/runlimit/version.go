package main

import (
	"runtime/debug"
	"strings"
)

// version describes the binary from its build information: the module
// version ("v1.2.0" when installed with go install ...@v1.2.0, "(devel)"
// when built from a checkout), the VCS revision and whether the tree was
// modified when the build recorded them, and the Go version.
func version(info *debug.BuildInfo, ok bool) string {
	if !ok || info == nil {
		return "runlimit (devel), no build information"
	}
	v := info.Main.Version
	if v == "" {
		v = "(devel)"
	}
	var b strings.Builder
	b.WriteString("runlimit " + v)
	var rev, when string
	modified := false
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			when = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	if rev != "" {
		b.WriteString(", revision " + rev)
		if when != "" {
			b.WriteString(" of " + when)
		}
		if modified {
			b.WriteString(", modified")
		}
	}
	if info.GoVersion != "" {
		b.WriteString(", built with " + info.GoVersion)
	}
	return b.String()
}
