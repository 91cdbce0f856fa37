package conformance

import (
	"fmt"
	"testing"
)

// testOverlappingCreations is testOverlappingChecks for keys that do not
// exist yet: every racer checks the same new keys of one partition in
// turn, so that each key is created by one admission while the others
// wait on its lock. A store that inserts a new key's counter after
// dropping and retaking its lock (to allocate the entry, write a row
// outside the transaction that read it, or update an index) lets a
// waiter read the key as absent in between, and both create it: a unit
// lost. Each key is created while the racers queue on the store's lock
// for the one before it, so a lock that hands itself to the first waiter
// (a sync.Mutex in its starvation mode, which the held clock reads bring
// about) lets the waiter in before the creator writes.
func testOverlappingCreations(t *testing.T, f *fixture) {
	const g = "concurrency: checks racing to create a key each count once"
	const workers, keys, limit = 4, 4, 100
	p := f.policy(limit, window)
	ks := f.keysIn(p, f.somePart(p), keys)
	ws := make([]worker, workers)
	for i := range ws {
		ops := make([]raceOp, keys)
		for j, k := range ks {
			ops[j] = f.checkOp(f.check(p, k), f.path)
		}
		ws[i] = worker{name: fmt.Sprintf("checker %d", i+1), ops: ops}
	}
	results := f.race(g, true, ws)
	f.logRace(fmt.Sprintf("%d goroutines, each checking %d new keys of one partition in turn via %s", workers, keys, f.path), true, results)
	for j, k := range ks {
		perKey := make([][]result, workers)
		for i := range results {
			perKey[i] = results[i][j : j+1]
		}
		f.requireExactCount(perKey, limit, workers, fmt.Sprintf("%s (new key %d of %d)", g, j+1, keys))
		f.allow(f.checkCost(p, k, limit-workers), 0, fmt.Sprintf("%s (every allowed check of new key %d was counted)", g, j+1))
	}
}
