package report_test

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/benchmarks/benchcsv"
	"github.com/runlimit/runlimit/benchmarks/report"
)

func TestPeerRatiosDivideRunlimitByEachPeer(t *testing.T) {
	t.Parallel()
	ratios := report.PeerRatios(peerRows())
	// Two Runlimit rows times two peers, in the order they first appear.
	require.Len(t, ratios, 4)
	require.Equal(t, [4][2]string{{"runlimit-hmac", "golimiter"}, {"runlimit-hmac", "xtime"}, {"runlimit", "golimiter"}, {"runlimit", "xtime"}},
		[4][2]string{{ratios[0].Runlimit, ratios[0].Peer}, {ratios[1].Runlimit, ratios[1].Peer},
			{ratios[2].Runlimit, ratios[2].Peer}, {ratios[3].Runlimit, ratios[3].Peer}})

	hmacGo := ratios[0].ByScenario
	require.InDelta(t, 300.0/80, hmacGo[benchcsv.Hot], 1e-12)
	require.True(t, math.IsNaN(hmacGo[benchcsv.Keys10k]), "runlimit-hmac has no 10k row")
	require.InDelta(t, 0.75, hmacGo[benchcsv.Retained], 1e-12, "bytes per key, not time")

	onceGo := ratios[2].ByScenario
	require.InDelta(t, 1.25, onceGo[benchcsv.Hot], 1e-12)
	require.InDelta(t, 1.5, onceGo[benchcsv.Keys10k], 1e-12)
	require.True(t, math.IsNaN(onceGo[benchcsv.Parallel]), "go-limiter has no parallel row")
	require.True(t, math.IsNaN(onceGo[benchcsv.Retained]), "runlimit has no retained row")

	require.InDelta(t, 0.8, ratios[3].ByScenario[benchcsv.Hot], 1e-12)
}

func TestPGRatiosDivideRatesPerCallerCount(t *testing.T) {
	t.Parallel()
	ratios := report.PGRatios(pgRows(9600))
	require.Len(t, ratios, 3)

	one := ratios[0]
	require.Equal(t, 1, one.Callers)
	require.InDelta(t, 0.8, one.StoreFloor, 1e-12)
	require.True(t, math.IsNaN(one.OptimisticFloor), "no optimistic store at 1 caller")
	require.True(t, math.IsNaN(one.StoreStepwise))
	require.True(t, math.IsNaN(one.OptimisticStepwise))
	require.True(t, math.IsNaN(one.StoreRedis))
	require.True(t, math.IsNaN(one.StoreNaive))
	require.True(t, math.IsNaN(one.OptimisticStore))

	eight := ratios[1]
	require.Equal(t, 8, eight.Callers)
	require.InDelta(t, 0.8, eight.StoreFloor, 1e-12)
	require.InDelta(t, 0.95, eight.OptimisticFloor, 1e-12)
	require.True(t, math.IsNaN(eight.OptimisticStepwise), "no per-statement protocol at 8 callers")
	require.InDelta(t, 7600.0/6400, eight.OptimisticStore, 1e-12)

	many := ratios[2]
	require.Equal(t, 32, many.Callers)
	require.InDelta(t, 0.8, many.StoreFloor, 1e-12)
	require.InDelta(t, 0.96, many.OptimisticFloor, 1e-12)
	require.InDelta(t, 2.0, many.StoreStepwise, 1e-12)
	require.InDelta(t, 2.4, many.OptimisticStepwise, 1e-12)
	require.InDelta(t, 0.25, many.StoreRedis, 1e-12)
	require.InDelta(t, 0.5, many.StoreNaive, 1e-12)
	require.InDelta(t, 1.2, many.OptimisticStore, 1e-12)
}
