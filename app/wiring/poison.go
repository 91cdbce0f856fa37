package wiring

import (
	"context"
	"log/slog"
	"slices"
	"sync"
)

// poisonReporter is a store that can name its poisoned partitions, as
// [memory.Store.PoisonedShards] does.
type poisonReporter interface {
	PoisonedShards() []int
}

// poisonWatch logs each poisoned shard of a store once, at error level,
// from the cleanup loop and readiness checks: a poisoned shard fails every
// admission that touches it until recovered, so it is logged when found,
// not on every request or pass that meets it. A shard recovered and
// poisoned again is logged again.
type poisonWatch struct {
	store string
	src   poisonReporter

	mu     sync.Mutex
	logged []int // the poisoned shards already logged, ascending
}

// newPoisonWatch returns a watch on store when it can report poisoned
// shards, and nil otherwise.
func newPoisonWatch(name string, store any) *poisonWatch {
	src, ok := store.(poisonReporter)
	if !ok {
		return nil
	}
	return &poisonWatch{store: name, src: src}
}

// check logs the shards poisoned since the last check. It is safe for
// concurrent use.
func (w *poisonWatch) check(ctx context.Context, logger *slog.Logger) {
	shards := w.src.PoisonedShards()
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(shards) == 0 && len(w.logged) == 0 {
		return
	}
	for _, sh := range shards {
		if _, found := slices.BinarySearch(w.logged, sh); found {
			continue
		}
		logger.LogAttrs(ctx, slog.LevelError,
			"runlimit: memory store shard poisoned by a panic; its checks fail closed until it is recovered",
			slog.String("store", w.store), slog.Int("shard", sh), slog.Int("poisoned_shards", len(shards)))
	}
	w.logged = append(w.logged[:0], shards...)
}
