package postgres

import (
	"crypto/sha256"
	"encoding/binary"

	"github.com/runlimit/runlimit/domain"
)

const advisoryLockDomain = "runlimit/postgres-advisory-lock/v1"

// AdvisoryLockID returns the pg_advisory_xact_lock id an admission takes on
// counter key k: the first 8 bytes, read as a signed big-endian integer, of
// SHA-256 over "runlimit/postgres-advisory-lock/v1", 0x00 and the 64-byte
// counter key. Runlimit for Rust derives the same ids, so services in both
// languages serialise on the same locks.
//
// The advisory-lock namespace is shared by everything connected to the
// database; see the package documentation.
func AdvisoryLockID(k domain.CounterKey) int64 {
	var buf [len(advisoryLockDomain) + 1 + domain.CounterKeySize]byte
	copy(buf[:], advisoryLockDomain)
	kb := k.Bytes()
	copy(buf[len(advisoryLockDomain)+1:], kb[:])
	sum := sha256.Sum256(buf[:])
	return int64(binary.BigEndian.Uint64(sum[:8]))
}
