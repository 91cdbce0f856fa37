// Package leakcheck prints a value through every printer a host application
// is likely to use (every fmt verb, encoding/json, log/slog's text and JSON
// handlers, and testify's failure diffs, which dump values with spew), alone
// and nested in host structs by value and by pointer, in exported and
// unexported fields, and fails a test when any output spells a secret.
//
// Secrets are byte strings: a key secret, a password, a subject, raw key
// bytes, a hasher's keyed state. Every window of [Window] consecutive bytes
// of a secret is looked for in every spelling fmt, json and spew use for
// bytes, so a partial print (one half of a counter key, a chunk of a state)
// is caught too.
//
// [RequireEveryType] holds a table of cases to every type and error
// variable a package exports, so that a type added later is printed too.
package leakcheck

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// Window is the length of the byte windows looked for. Six bytes of a
// uniform key are 48 bits: they never occur by chance in a test's output.
const Window = 6

// Verbs are the fmt verbs every value is printed with.
var Verbs = []string{
	"%v", "%+v", "%#v", "%s", "%q", "%x", "%X", "% x", "%d", "%t",
	"%b", "%o", "%e", "%f", "%g", "%c", "%U", "%p", "%10.3v", "%-8s",
}

// Renderings returns the spellings of every Window-byte window of secret
// (the whole secret when it is shorter): raw, quoted, hex in both cases and
// spaced, decimal, octal and binary lists, Go syntax, and the base64 that
// encoding/json uses for byte slices.
func Renderings(secret []byte) []string {
	if len(secret) == 0 {
		return nil
	}
	w := min(Window, len(secret))
	var out []string
	for i := 0; i+w <= len(secret); i++ {
		b := secret[i : i+w]
		var dec, oct, bin, goSyntax, goSyntaxUpper []string
		for _, c := range b {
			dec = append(dec, strconv.Itoa(int(c)))
			oct = append(oct, strconv.FormatInt(int64(c), 8))
			bin = append(bin, strconv.FormatInt(int64(c), 2))
			goSyntax = append(goSyntax, fmt.Sprintf("%#x", c))
			goSyntaxUpper = append(goSyntaxUpper, fmt.Sprintf("%#X", c))
		}
		quoted := strconv.Quote(string(b))
		h := hex.EncodeToString(b)
		out = append(out,
			string(b),
			quoted[1:len(quoted)-1],
			h,
			strings.ToUpper(h),
			fmt.Sprintf("% x", b),
			fmt.Sprintf("% X", b),
			strings.Join(dec, " "),
			strings.Join(dec, ","),
			strings.Join(oct, " "),
			strings.Join(bin, " "),
			strings.Join(goSyntax, ", "),
			strings.Join(goSyntaxUpper, ", "),
		)
	}
	// Base64 spells 3 bytes as 4 characters, so only windows starting at a
	// multiple of 3 bytes have a fixed spelling: 8 characters each.
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding} {
		s := strings.TrimRight(enc.EncodeToString(secret), "=")
		for i := 0; i+8 <= len(s) && len(secret) >= Window; i += 4 {
			out = append(out, s[i:i+8])
		}
	}
	return out
}

// Host structs that hold a value the ways applications do.
type (
	exportedHost[T any] struct {
		Name  string
		Value T
		Ptr   *T
		Slice []T
		Map   map[string]T
		Any   any
	}
	unexportedHost[T any] struct {
		name  string
		value T
		ptr   *T
		slice []T
		m     map[string]T
		a     any
	}
)

// Hosts returns v alone and nested, by value and by pointer, in exported and
// unexported fields of host structs, keyed by a description.
func Hosts[T any](v T) map[string]any {
	p := &v
	ex := exportedHost[T]{Name: "host", Value: v, Ptr: p, Slice: []T{v}, Map: map[string]T{"k": v}, Any: v}
	un := unexportedHost[T]{name: "host", value: v, ptr: p, slice: []T{v}, m: map[string]T{"k": v}, a: v}
	return map[string]any{
		"alone":                    v,
		"pointer":                  p,
		"in exported fields":       ex,
		"in exported fields (ptr)": &ex,
		"in unexported fields":     un,
		"in unexported (ptr)":      &un,
		"in a slice of any":        []any{v, p},
		"in a map of any":          map[string]any{"v": v, "p": p},
	}
}

// noTime drops slog's timestamp: it holds no part of the value printed, and
// its digits would match a secret's run of digits by chance.
var noTime = &slog.HandlerOptions{ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
	if len(groups) == 0 && a.Key == slog.TimeKey {
		return slog.Attr{}
	}
	return a
}}

// recorder is the testing.T that testify writes its failure messages to.
type recorder struct{ bytes.Buffer }

func (r *recorder) Errorf(format string, args ...any) { fmt.Fprintf(&r.Buffer, format, args...) }

// Prints returns every printing of v, keyed by the printer's name.
func Prints(v any) map[string]string {
	out := make(map[string]string)
	for _, verb := range Verbs {
		out["fmt "+verb] = fmt.Sprintf(verb, v)
	}
	out["fmt.Sprint"] = fmt.Sprint(v)
	out["fmt.Sprintln"] = fmt.Sprintln(v, v)
	// A nil pointer in an error is left to the printers, which print it as
	// <nil>: its Error method may dereference it, as most do.
	if err, ok := v.(error); ok && err != nil && !isNilPointer(err) {
		out["Error()"] = err.Error()
	}
	if b, err := json.Marshal(v); err != nil {
		out["json.Marshal"] = "error: " + err.Error()
	} else {
		out["json.Marshal"] = string(b)
	}
	if b, err := json.MarshalIndent(map[string]any{"v": v}, "", " "); err == nil {
		out["json.MarshalIndent"] = string(b)
	}
	for name, newHandler := range map[string]func(*bytes.Buffer) slog.Handler{
		"slog text": func(b *bytes.Buffer) slog.Handler { return slog.NewTextHandler(b, noTime) },
		"slog json": func(b *bytes.Buffer) slog.Handler { return slog.NewJSONHandler(b, noTime) },
	} {
		var b bytes.Buffer
		log := slog.New(newHandler(&b))
		log.Info("event", "value", v)
		log.Error("failed", slog.Any("err", v), slog.Group("g", "value", v))
		out[name] = b.String()
	}
	// testify prints both values with %#v and, for values of one type, a
	// diff of spew dumps that walk unexported fields and pointers.
	var r recorder
	assert.Equal(&r, exportedHost[any]{Name: "a", Any: v}, exportedHost[any]{Name: "b", Any: v})
	assert.Equal(&r, v, nil)
	assert.Equal(&r, []any{v, 1}, []any{v, 2})
	out["testify diff"] = r.String()
	return out
}

// Check fails t when any printing of v, alone or in a host struct, contains
// any rendering of any of secrets. name describes v in the failure.
func Check[T any](t testing.TB, name string, v T, secrets ...[]byte) {
	t.Helper()
	var forbidden []string
	for _, s := range secrets {
		forbidden = append(forbidden, Renderings(s)...)
	}
	for host, hv := range Hosts(v) {
		for printer, out := range Prints(hv) {
			for _, bad := range forbidden {
				if strings.Contains(out, bad) {
					t.Fatalf("leakcheck: %s %s, printed by %s, contains %q:\n%s", name, host, printer, bad, out)
				}
			}
		}
	}
}

// CheckPrintable fails t when printing v through any printer of [Prints],
// alone or in a host struct, panics or makes fmt report a panic of one of
// v's methods ("%!v(PANIC=..."). Zero values and nil pointers of a
// package's types must print, as hosts log whatever they hold.
func CheckPrintable[T any](t testing.TB, name string, v T) {
	t.Helper()
	for host, hv := range Hosts(v) {
		var outs map[string]string
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Fatalf("leakcheck: printing %s %s panicked: %v", name, host, r)
				}
			}()
			outs = Prints(hv)
		}()
		for printer, out := range outs {
			if strings.Contains(out, "PANIC=") {
				t.Fatalf("leakcheck: %s %s, printed by %s, panicked:\n%s", name, host, printer, out)
			}
		}
	}
}

// isNilPointer reports whether v holds a nil pointer.
func isNilPointer(v any) bool {
	rv := reflect.ValueOf(v)
	return rv.Kind() == reflect.Pointer && rv.IsNil()
}
