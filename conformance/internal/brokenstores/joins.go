package brokenstores

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"

	"github.com/runlimit/runlimit/domain"
)

// policyFields returns c's counter key and policy, and the policy's
// fields as a store that builds its own key from them reads them.
func policyFields(c domain.Check) (k domain.CounterKey, p domain.Policy, id, scope string, limit, windowMillis int64) {
	p = c.Policy()
	return c.CounterKey(), p, p.ID().String(), p.Scope().String(), p.Limit(), p.Window().Milliseconds()
}

// joinedKey is the key a fault that builds its own key from the policy's
// fields, or from part of its fingerprint, keeps c's counter under. Its
// first byte keeps c's partition, so that keys the fault cannot tell apart
// share a counter when they share a partition, as in a store that keys a
// map per partition.
func (s *Store) joinedKey(c domain.Check) domain.CounterKey {
	k, _, id, scope, limit, windowMillis := policyFields(c)
	var fp domain.Fingerprint
	switch s.cfg.Fault {
	case KeysByInt32Limit:
		fp = fieldsKey(id, scope, int64(int32(limit)), windowMillis)
	case KeysByFloatLimit:
		fp = fieldsKey(id, scope, int64(float64(limit)), windowMillis)
	case KeysByInt32WindowMillis:
		fp = fieldsKey(id, scope, limit, int64(int32(windowMillis)))
	case KeysByJoinedText:
		fp = sha256.Sum256(fmt.Appendf(nil, "%s:%s:%d:%d", id, scope, limit, windowMillis))
	case KeysByUnseparatedFields:
		b := append([]byte(id), scope...)
		b = binary.BigEndian.AppendUint64(b, uint64(limit))
		fp = sha256.Sum256(binary.BigEndian.AppendUint64(b, uint64(windowMillis)))
	case KeysByFingerprintPrefix:
		f := k.Fingerprint()
		copy(fp[1:], f[:4])
	case KeysByFingerprintSuffix:
		f := k.Fingerprint()
		copy(fp[1:], f[28:])
	}
	sk := k.SubjectKey().Bytes()
	fp[0] = byte(s.PartitionOf(k)) ^ sk[0]
	return domain.NewCounterKey(fp, k.SubjectKey())
}

// fieldsKey is a fingerprint of the policy's fields, separated as the
// domain's is.
func fieldsKey(id, scope string, limit, windowMillis int64) domain.Fingerprint {
	b := append(append(append([]byte(id), 0), scope...), 0)
	b = binary.BigEndian.AppendUint64(b, uint64(limit))
	return sha256.Sum256(binary.BigEndian.AppendUint64(b, uint64(windowMillis)))
}

// subjectClaimed reports, for NewKeysClaimBySubject, whether an earlier new
// key of the admission in partition p has check i's subject key, whose
// claim the defect takes for check i's too. The caller holds s.mu.
func (s *Store) subjectClaimed(a *admission, i, p int) bool {
	if s.cfg.Fault != NewKeysClaimBySubject {
		return false
	}
	sk := a.keys[i].SubjectKey()
	for j := range i {
		if a.claimed[j] == p && a.keys[j].SubjectKey() == sk {
			return true
		}
	}
	return false
}

// claimsSeen returns the slots of each partition that check i finds claimed
// by the admission's earlier new keys: claims, or with NewKeysClaimByPolicy
// only those of keys under check i's policy fingerprint. The caller holds
// s.mu.
func (s *Store) claimsSeen(a *admission, i, p int, claims []int) []int {
	if s.cfg.Fault != NewKeysClaimByPolicy {
		return claims
	}
	seen := make([]int, len(claims))
	fp := a.keys[i].Fingerprint()
	for j := range i {
		if a.claimed[j] == p && a.keys[j].Fingerprint() == fp {
			seen[p]++
		}
	}
	return seen
}

// removeSubject removes, for CleanupRemovesSubject, the active counters
// that share removed's subject key under other policies. The caller holds
// s.mu.
func (s *Store) removeSubject(removed domain.CounterKey) {
	now := domain.Instant(s.last.Load())
	for k, c := range s.entries {
		if k.SubjectKey() == removed.SubjectKey() && c.Active(now) {
			s.tryRemove(k, true)
		}
	}
}
