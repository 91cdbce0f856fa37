package nilcheck_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/internal/nilcheck"
)

type store struct{}

func (*store) Close() error { return nil }

func TestIsNil(t *testing.T) {
	t.Parallel()
	var nilStore *store
	var nilFunc func()
	var nilMap map[string]int
	var nilSlice []int
	var nilChan chan int
	var closer interface{ Close() error } = nilStore
	for name, x := range map[string]any{
		"nil": nil, "nil pointer": nilStore, "nil pointer in an interface": closer,
		"nil func": nilFunc, "nil map": nilMap, "nil slice": nilSlice, "nil chan": nilChan,
	} {
		require.True(t, nilcheck.IsNil(x), name)
	}
	for name, x := range map[string]any{
		"pointer": &store{}, "func": func() {}, "map": map[string]int{}, "slice": []int{},
		"value": store{}, "int": 0, "error": errors.New("e"),
	} {
		require.False(t, nilcheck.IsNil(x), name)
	}
}

type named interface{ Name() string }

type one string

func (o one) Name() string { return string(o) }

type many []named

func (m many) Name() string { return "many" }

type ptr struct{}

func (*ptr) Name() string { return "ptr" }

func TestFlatten(t *testing.T) {
	t.Parallel()
	list := func(n named) ([]named, bool) {
		m, ok := n.(many)
		return m, ok
	}
	var nilPtr *ptr
	got := nilcheck.Flatten([]named{nil, one("a"), nilPtr, many{one("b"), one("c")}, one("d")}, list)
	require.Equal(t, []named{one("a"), one("b"), one("c"), one("d")}, got, "nil values left out, joined ones spread, order kept")
	require.Empty(t, nilcheck.Flatten([]named{nil, nilPtr}, list))
}
