// Package domain holds Runlimit's rules: validated identifiers and policies,
// HMAC-derived subject keys, checks, batch validation, anchored fixed-window
// evaluation and decisions. It does no I/O, reads no clock and starts no
// goroutine; stores supply the time and the state.
//
// # Policies
//
// A [Policy] allows at most a limit of units per anchored window, per subject:
//
//	id, _ := domain.NewPolicyID("auth.login")
//	scope, _ := domain.NewScopeID("identity")
//	policy, err := domain.NewPolicy(id, scope, 8, time.Minute)
//
// The first allowed check starts a window; later checks share it until the
// whole window has passed. Windows are not aligned to the wall clock.
// Limits run from 1 to [MaxLimit] and windows are whole milliseconds from
// 1 ms to [MaxWindow], so every valid policy fits every store.
//
// # Subject keys
//
// Stores never see subjects. A [KeyHasher] turns a normalized subject into a
// [SubjectKey] with HMAC-SHA-256 under a secret of at least 32 bytes:
//
//	hasher, err := domain.NewKeyHasher(secret)
//	key := hasher.KeyString(policy, "user@example.test")
//
// Keys, counter keys and the hasher print as "[redacted]" under every fmt
// verb.
//
// # Checks, batches and decisions
//
// A [Check] asks for a cost (1 by default) of a policy for one subject key.
// A [Batch] groups checks that must all pass or all fail; stores drive it
// through the protocol described on [Batch]. A store's single-check path
// drives the same protocol on a batch of one made with [Batch.ResetSingle],
// which needs neither a pooled batch nor an allocation, so that a store
// writes its admission flow once. The result is a [Decision] per
// check or a [BatchDecision]: allowed with an [Allowance], denied with a
// [Denial] (quota exhausted or storage capacity), or shadow-denied when a
// policy in [Shadow] mode would have denied. Over the limit is a decision,
// never an error: errors report invalid input ([ErrInvalidInput]) or a
// broken store.
package domain
