// Package nilcheck tells a usable interface value from one that only looks
// set: the constructors of app, app/wiring and adapters/httplimit refuse a
// store, an observer or a limiter that would panic on first use.
package nilcheck

import "reflect"

// IsNil reports whether x is nil or holds a nil pointer, map, slice, func
// or chan, whose methods would most likely panic on first use.
func IsNil(x any) bool {
	if x == nil {
		return true
	}
	switch v := reflect.ValueOf(x); v.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Slice, reflect.Func, reflect.Chan:
		return v.IsNil()
	}
	return false
}

// Flatten returns the usable values of items in order: each one that is
// nil or only looks set ([IsNil]) left out, and each one that list says
// stands for several (a joined value) replaced by those. It is how
// app.JoinObservers and wiring.JoinCleanupObservers join.
func Flatten[T any](items []T, list func(T) ([]T, bool)) []T {
	var out []T
	for _, it := range items {
		if IsNil(it) {
			continue
		}
		if many, ok := list(it); ok {
			out = append(out, many...)
			continue
		}
		out = append(out, it)
	}
	return out
}
