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
