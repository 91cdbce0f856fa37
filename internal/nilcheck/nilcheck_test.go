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
