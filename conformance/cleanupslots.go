package conformance

import (
	"fmt"
	"testing"

	"github.com/runlimit/runlimit/domain"
)

// cleanupSlotOptions leave room in one partition for three rounds of two
// keys, with slots to spare for the count at the end.
var cleanupSlotOptions = Options{Capacity: 8, MaxBatchSize: 8}

// testCleanupRacingRenewalsKeepsSlots races CleanupExpired against the
// renewals of two expired keys of one partition, as
// cleanup_racing_admissions_keeps_renewals_and_does_not_deadlock does, and
// then counts the partition's slots exactly: by filling it. A store that
// deletes a collected counter only if it is still expired (a conditional
// delete) but frees its slot in a write of its own, whatever the delete
// did, keeps the renewed counter and loses its slot, and the partition
// then takes one key more than it holds. Each round renews keys of its
// own (a loaded machine that stalls a racer can spoil a round, not
// three); cleanup in the next round removes them once they have expired
// again.
func testCleanupRacingRenewalsKeepsSlots(t *testing.T, f *fixture) {
	const g = "concurrency: CleanupExpired racing renewals frees only the slots of the counters it removed"
	cleanup := f.requireCleaner()
	const limit, rounds = 3, 3
	p := f.policy(limit, window)
	part := f.somePart(p)
	var live []domain.SubjectKey
	for round := range rounds {
		h, k := f.keyIn(p, part), f.keyIn(p, part)
		f.allow(f.check(p, h), limit-1, g)
		f.allow(f.check(p, k), limit-1, g)
		f.advance(window)
		results := f.race(g, true, []worker{
			{name: "renewal of h", pinned: true, ops: []raceOp{f.checkOp(f.check(p, h), f.path)}},
			{name: "cleanup", wave: 1, watched: true, ops: []raceOp{f.cleanupOp(10)}},
			{name: "renewal of k", wave: 2, ops: []raceOp{f.checkOp(f.check(p, k), f.path)}},
		})
		f.logRace(fmt.Sprintf("round %d of %d: %s %s while CleanupExpired(10) starts, then %s",
			round+1, rounds, f.log.check(f.check(p, h)), f.heldInClock(), f.log.check(f.check(p, k))), true, results)
		f.requireRaceDone(results, g)
		live = []domain.SubjectKey{h, k}
	}
	// Only the last round's two counters are active; cleanup removes
	// whatever the races left of the others.
	f.cleanAll(cleanup, f.opts.Capacity, g)
	for _, k := range live {
		f.allow(f.checkCost(p, k, limit-1), 0, g+" (the last round's renewed counter is kept)")
	}
	f.admitNew(p, part, f.opts.Capacity-len(live), g+" (the partition's free slots)")
	f.deny(f.check(p, f.keyIn(p, part)), domain.StorageCapacity, g+" (the partition holds Capacity counters: a slot "+
		"freed for a renewed counter cleanup did not remove lets one key too many in)")
	f.requireOccupancy(occupancy{part: f.opts.Capacity}, g)
}
