package ports_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/ports"
)

func TestStatsMinHeadroom(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name     string
		headroom []int64
		want     int64
	}{
		{"no partitions", nil, 0},
		{"one partition", []int64{7}, 7},
		{"the fullest partition wins", []int64{5, 0, 9}, 0},
		{"the minimum anywhere", []int64{9, 8, 3, 4}, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.want, ports.Stats{Headroom: tt.headroom}.MinHeadroom())
		})
	}
}
