package leakcheck

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// Dump returns testify's whole spew dump of v in every host of [Hosts]. The
// diffs [Prints] records show only the lines around a difference; a failed
// ElementsMatch prints both lists whole, walking unexported fields and
// pointers ten levels deep without calling a method, as any testify
// failure that dumps a value does.
func Dump[T any](v T) string {
	var hosts []any
	for _, h := range Hosts(v) {
		hosts = append(hosts, h)
	}
	var r recorder
	assert.ElementsMatch(&r, hosts, []any{})
	return r.String()
}

// CheckDump fails t when [Dump] of v contains any rendering of any of
// secrets. Use it beside [Check] for values that hold state deep behind
// pointers: a store, a pool, a runtime.
func CheckDump[T any](t testing.TB, name string, v T, secrets ...[]byte) {
	t.Helper()
	dump := Dump(v)
	for _, s := range secrets {
		for _, bad := range Renderings(s) {
			if i := strings.Index(dump, bad); i >= 0 {
				t.Fatalf("leakcheck: %s, dumped whole by testify's spew, contains %q:\n%s",
					name, bad, dump[max(0, i-400):i+len(bad)])
			}
		}
	}
}
