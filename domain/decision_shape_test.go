package domain

import (
	"reflect"
	"testing"
	"unsafe"
)

// TestDecisionStaysInRegisters: the compiler keeps a struct in registers
// only while it has at most four fields and four words, and every layer
// of an admission returns a Decision. A fifth field would still compile
// and pass every other test while each of those returns went through
// memory again.
func TestDecisionStaysInRegisters(t *testing.T) {
	t.Parallel()

	if n := reflect.TypeFor[Decision]().NumField(); n > 4 {
		t.Fatalf("Decision has %d fields, want at most 4", n)
	}
	if n := reflect.TypeFor[verdict]().NumField(); n > 4 {
		t.Fatalf("verdict has %d fields, want at most 4", n)
	}
	if size := unsafe.Sizeof(Decision{}); size > 4*unsafe.Sizeof(uintptr(0)) {
		t.Fatalf("Decision is %d bytes, want at most four words", size)
	}
}
