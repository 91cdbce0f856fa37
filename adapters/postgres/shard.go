package postgres

import "github.com/runlimit/runlimit/domain"

// ShardOf returns the capacity shard of counter key k, 0 to 255: the first
// byte of its fingerprint XOR the first byte of its subject key, as the
// ledger triggers compute it.
func ShardOf(k domain.CounterKey) int {
	b := k.Bytes()
	return int(b[0] ^ b[32])
}
