package brokenstores_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/conformance/internal/brokenstores"
)

func TestParseFaultReadsEveryName(t *testing.T) {
	t.Parallel()
	for _, f := range append(brokenstores.Faults(), brokenstores.None) {
		got, ok := brokenstores.ParseFault(f.String())
		require.True(t, ok, f.String())
		require.Equal(t, f, got)
	}
	_, ok := brokenstores.ParseFault("unknown")
	require.False(t, ok)
}
