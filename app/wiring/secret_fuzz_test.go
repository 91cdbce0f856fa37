package wiring_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/app/wiring"
)

// FuzzSecretPrintsAlike reads a value of any bytes into a Secret as a
// host's configuration would (NewSecret, or a JSON document's string
// through UnmarshalText) and requires that it reveals the value, and that
// every printer (each fmt verb, with flags, on the Secret, a pointer to it
// and a struct holding it; encoding/json; log/slog's text and JSON
// handlers; MarshalText) prints exactly what it prints for any other
// non-empty secret, or for the empty one: nothing depends on the value but
// whether it is empty.
func FuzzSecretPrintsAlike(f *testing.F) {
	for _, s := range []string{"", "postgres://app:S3cr3t-pa55w0rd@db/app", "[redacted]", "%v", "\x00", "\"}", "\xff\xfe", "a\nb"} {
		f.Add(s)
	}
	type holder struct {
		URL    wiring.Secret
		Key    *wiring.Secret
		hidden wiring.Secret
	}
	prints := func(t testing.TB, s wiring.Secret) string {
		var out bytes.Buffer
		h := holder{URL: s, Key: &s, hidden: s}
		for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%X", "%d", "%10.3s", "%-8v", "%T"} {
			fmt.Fprintf(&out, verb+"|", s)
			fmt.Fprintf(&out, verb+"|", h)
		}
		fmt.Fprint(&out, s, &s, []wiring.Secret{s}, map[string]wiring.Secret{"k": s})
		js, err := json.Marshal(h)
		require.NoError(t, err)
		out.Write(js)
		text, err := s.MarshalText()
		require.NoError(t, err)
		out.Write(text)
		slog.New(slog.NewTextHandler(&out, noTime)).Info("m", "s", s, "h", h)
		slog.New(slog.NewJSONHandler(&out, noTime)).Info("m", "s", s, "h", h)
		// Printers that walk the unexported field show the address the
		// Secret holds, the only thing that differs between two printings
		// of one value: removed in each form they write it in.
		addr := reflect.ValueOf(s).Field(0).Pointer()
		printed := out.String()
		for _, form := range []string{"%#x", "%x", "%X", "%d"} {
			printed = strings.ReplaceAll(printed, fmt.Sprintf(form, addr), "ADDR")
		}
		return printed
	}
	set, empty := prints(f, wiring.NewSecret("another value")), prints(f, wiring.NewSecret(""))
	f.Fuzz(func(t *testing.T, value string) {
		doc, err := json.Marshal(map[string]string{"URL": value})
		require.NoError(t, err)
		var decoded struct{ URL wiring.Secret }
		require.NoError(t, json.Unmarshal(doc, &decoded))
		for _, s := range []wiring.Secret{wiring.NewSecret(value), decoded.URL} {
			require.False(t, s.IsZero())
			want := set
			if s.Reveal() == "" {
				want = empty
			}
			require.Equal(t, want, prints(t, s))
		}
		require.Equal(t, value, wiring.NewSecret(value).Reveal())
		// encoding/json replaces bytes that are not UTF-8.
		var back map[string]string
		require.NoError(t, json.Unmarshal(doc, &back))
		require.Equal(t, back["URL"], decoded.URL.Reveal())
	})
}
