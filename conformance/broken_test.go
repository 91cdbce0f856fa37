package conformance_test

import (
	"flag"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/conformance"
	bs "github.com/runlimit/runlimit/conformance/internal/brokenstores"
)

// childEnv marks a child process in which the suite runs against a broken
// store.
const childEnv = "RUNLIMIT_CONFORMANCE_BROKEN_STORES"

// targets names, for each fault, the case written to catch it: scenario/case,
// or scenario/case/path when only one single-check path has the defect.
var targets = map[bs.Fault]string{
	bs.RenewsEarly:                        "windows/renewal_exactly_at_expiry",
	bs.RenewsLate:                         "windows/renewal_exactly_at_expiry",
	bs.InclusiveEnd:                       "windows/renewal_exactly_at_expiry",
	bs.SlidesWindow:                       "windows/exact_remaining_and_reset",
	bs.RenewsAtOldEnd:                     "windows/renewal_after_expiry_anchors_at_the_renewing_check",
	bs.StampsWithSecondClockRead:          "anchoring/a_batch_anchors_new_windows_at_the_time_it_decided_at",
	bs.StoresMilliseconds:                 "windows/exact_remaining_and_reset",
	bs.StoresSeconds:                      "windows/short_windows_are_exact",
	bs.ClockBackwards:                     "time/later_windows_never_end_earlier",
	bs.FloatCounts:                        "windows/counts_beyond_32_and_53_bits_are_exact",
	bs.Int32Counts:                        "windows/counts_beyond_32_and_53_bits_are_exact",
	bs.FloatMicroseconds:                  "windows/largest_limit_and_window",
	bs.JSONRoundTrip:                      "windows/counts_beyond_32_and_53_bits_are_exact",
	bs.ExpiredNeedsSlot:                   "capacity/expired_key_renews_in_place",
	bs.KeysWithoutScopePerPartition:       "windows/counters_independent_per_fingerprint",
	bs.CachesReads:                        "windows/cost_above_one",
	bs.CachesBatches:                      "batches/repeated_batches_count_every_time",
	bs.SingleCheckCache:                   "paths/single_check_and_batch_of_one_share_a_counter",
	bs.ReordersAllowances:                 "batches/caller_order_of_allowances",
	bs.WritesInLockOrder:                  "batches/caller_order_of_allowances",
	bs.CallerOrderLocks:                   "concurrency/opposite_order_batches_holding_their_first_lock_do_not_deadlock",
	bs.ReleasesLockBeforeWrite:            "concurrency/overlapping_checks_on_one_key_lose_no_update",
	bs.ReleasesLockBeforeDeciding:         "concurrency/overlapping_checks_on_one_key_lose_no_update",
	bs.SingleCheckOwnLock:                 "concurrency/single_checks_and_batches_exclude_each_other",
	bs.NotAtomic:                          "batches/all_or_nothing",
	bs.WritesBeforeDeciding:               "batches/all_or_nothing",
	bs.WritesOnShadowDenial:               "denials/shadow",
	bs.ConsumesOnDenial:                   "denials/quota",
	bs.IgnoresCapacity:                    "capacity/full_partition_denies_a_new_key",
	bs.EvictsLiveKeys:                     "capacity/never_evicts_an_active_key",
	bs.OverfillsInBatch:                   "capacity/new_keys_of_a_batch_compete_for_free_slots",
	bs.KeepsSlotsOfDeniedBatch:            "capacity/denied_batch_keeps_no_slot",
	bs.BoundCountsActiveOnly:              "capacity/expired_counters_hold_their_slots_until_removed",
	bs.GlobalBound:                        "capacity/each_partition_holds_its_own_bound",
	bs.CapacityRetryLatest:                "capacity/full_partition_denies_a_new_key",
	bs.ShadowIgnoresCapacity:              "shadow/capacity_denial_never_shadowed",
	bs.SingleCheckIgnoresCapacity:         "capacity/full_partition_denies_a_new_key/AdmitCheck",
	bs.CleanupRemovesActive:               "cleanup/removes_only_expired_counters",
	bs.CleanupIgnoresMax:                  "cleanup/removes_only_expired_counters",
	bs.CleanupNegativeMeansAll:            "cleanup/zero_or_negative_max_removes_nothing",
	bs.CleanupNegativeUntyped:             "cleanup/zero_or_negative_max_removes_nothing",
	bs.CleanupKeepsSlots:                  "capacity/new_key_fits_after_cleanup",
	bs.CleanupKeepsCounterAtEnd:           "cleanup/window_end_is_the_boundary",
	bs.StatsCountActiveOnly:               "capacity/expired_counters_hold_their_slots_until_removed",
	bs.StatsMisindexed:                    "capacity/each_partition_holds_its_own_bound",
	bs.IgnoresClose:                       "close/closed_store_fails_closed",
	bs.ClosedErrorMayHaveConsumed:         "close/closed_store_fails_closed",
	bs.ClosedErrorNamesKey:                "close/closed_store_fails_closed",
	bs.ClosedErrorUntyped:                 "close/closed_store_fails_closed",
	bs.SingleCheckSkipsValidation:         "paths/invalid_single_check_is_an_error",
	bs.IgnoresInjectedClock:               "windows/renewal_exactly_at_expiry",
	bs.ChargesOneUnit:                     "windows/cost_above_one",
	bs.KeysBySubjectOnly:                  "windows/counters_independent_per_fingerprint",
	bs.KeysByPolicyID:                     "windows/counters_independent_per_fingerprint",
	bs.LockOrderByPolicy:                  "concurrency/opposite_order_batches_holding_their_first_lock_do_not_deadlock",
	bs.ReadsBeforeLocking:                 "concurrency/overlapping_checks_on_one_key_lose_no_update",
	bs.LocksFirstKeyOnly:                  "concurrency/opposite_order_batches_holding_their_first_lock_do_not_deadlock",
	bs.ProceedsWhenLockBusy:               "concurrency/overlapping_checks_on_one_key_lose_no_update",
	bs.SingleCheckIgnoresCommit:           "denials/quota/AdmitCheck",
	bs.AnyFullPartitionRefuses:            "capacity/each_partition_holds_its_own_bound",
	bs.BatchClaimsShared:                  "capacity/new_keys_of_a_batch_take_slots_of_their_own_partitions",
	bs.BatchRenewalClaimsSlot:             "capacity/expired_key_renews_in_place",
	bs.CapacityRetryFirstKeyPartition:     "capacity/each_partition_holds_its_own_bound",
	bs.SingleCheckOrphanedRenewal:         "concurrency/cleanup_racing_admissions_keeps_renewals_and_does_not_deadlock/AdmitCheck",
	bs.CleanupFreesTwice:                  "capacity/new_key_fits_after_cleanup",
	bs.CleansActivePerCheck:               "capacity/never_evicts_an_active_key",
	bs.UnguardedCapacity:                  "concurrency/new_keys_racing_for_the_last_slots_take_exactly_those",
	bs.PerCheckCleanupKeepsSlots:          "capacity/expired_counters_hold_their_slots_until_removed",
	bs.CleanupMaxPerPartition:             "cleanup/removes_only_expired_counters",
	bs.PanicsWhenClosed:                   "close/closed_store_fails_closed",
	bs.RenewalTakesSlot:                   "capacity/renewals_leave_the_freed_slots_usable",
	bs.CleanupContextBeforeZero:           "cleanup/done_context_is_checked_after_the_maximum",
	bs.CleanupIgnoresContext:              "cleanup/done_context_is_checked_after_the_maximum",
	bs.CleanupContextBeforeNegative:       "cleanup/done_context_is_checked_after_the_maximum",
	bs.CleanupZeroSkipsClosed:             "close/closed_store_fails_closed",
	bs.PanicsOnNilContext:                 "context/nil_context_is_invalid_input",
	bs.NilContextUntyped:                  "context/nil_context_is_invalid_input",
	bs.ClockReadBeforeLocks:               "concurrency/clock_is_read_with_the_locks_held",
	bs.PartitionLocksInKeyOrder:           "concurrency/batches_crossing_partitions_holding_their_first_lock_do_not_deadlock",
	bs.ShadowSkipsLocks:                   "concurrency/overlapping_shadow_checks_lose_no_update",
	bs.StripeLockedTwice:                  "concurrency/large_batches_never_wait_on_their_own_locks",
	bs.CapacityRetryAnyPartition:          "capacity/full_partition_denies_a_new_key",
	bs.CapacityRetryFirstWindow:           "capacity/full_partition_denies_a_new_key",
	bs.StatsPanicsOnNilContext:            "context/nil_context_is_invalid_input",
	bs.IgnoresDoneContext:                 "context/done_context_admits_nothing",
	bs.DoneContextRawError:                "context/done_context_admits_nothing",
	bs.DoneContextErrorNamesKey:           "context/done_context_admits_nothing",
	bs.DoneContextErrorKeyField:           "context/done_context_admits_nothing",
	bs.ClosedBeforeNilContext:             "close/closed_store_fails_closed",
	bs.ClosedBeforeCheckValidation:        "close/closed_store_fails_closed",
	bs.DoneContextBeforeClosed:            "close/closed_store_fails_closed",
	bs.LateCancelUnconsumed:               "context/cancelled_admission_never_hides_a_unit",
	bs.SkipsBatchReady:                    "batches/unprepared_batch_is_the_callers_mistake",
	bs.ClosedBeforeBatchReady:             "close/closed_store_fails_closed",
	bs.CleanupLocksPartitionsDescending:   "concurrency/cleanup_racing_admissions_keeps_renewals_and_does_not_deadlock",
	bs.EpochAlignedWindows:                "windows/exact_remaining_and_reset",
	bs.SingleCheckReusesLastTime:          "windows/exact_remaining_and_reset/AdmitCheck",
	bs.TrustsInjectedClock:                "expiry/clock_stepping_back_moves_no_window_back",
	bs.CleanupKeepsReadCache:              "expiry/cleanup_forgets_a_counter_last_read_by_a_denial",
	bs.ReclaimTakesBatchKeySlot:           "expiry/batch_renewing_an_expired_key_keeps_its_slot",
	bs.CleanupSweepsCurrentMillisecond:    "expiry/counters_active_between_whole_milliseconds_are_kept",
	bs.WindowInt32Millis:                  "windows/largest_limit_and_window",
	bs.StoresUnixNanos:                    "windows/largest_limit_and_window",
	bs.ShadowSeparateCounter:              "shadow/switching_to_enforce_keeps_the_counter",
	bs.BatchReadsBySubject:                "batches/one_subject_under_several_policies",
	bs.RenewalKeepsCount:                  "windows/renewal_exactly_at_expiry",
	bs.LocksBySubject:                     "batches/one_subject_under_several_policies",
	bs.CleanupDeletesWithoutRecheck:       "concurrency/cleanup_racing_admissions_keeps_renewals_and_does_not_deadlock",
	bs.CleanupDropsKeyLock:                "concurrency/counter_removed_and_created_anew_under_a_held_renewal_loses_no_update",
	bs.CleanupHoldsClockLock:              "concurrency/cleanup_racing_admissions_keeps_renewals_and_does_not_deadlock",
	bs.CleanupStaleExpiryIndex:            "capacity/renewals_leave_the_freed_slots_usable",
	bs.StatsEntriesNeverShrink:            "cleanup/removes_only_expired_counters",
	bs.OptimisticCountOnly:                "concurrency/overlapping_renewals_of_an_expired_window_lose_no_update",
	bs.OptimisticVersionRestarts:          "concurrency/counter_removed_and_created_anew_under_a_held_renewal_loses_no_update",
	bs.DoneContextErrorKeyBase32:          "context/done_context_admits_nothing",
	bs.DoneContextErrorKeyQuoted:          "context/done_context_admits_nothing",
	bs.DoneContextErrorKeySpacedHex:       "context/done_context_admits_nothing",
	bs.DoneContextErrorLockID:             "context/done_context_admits_nothing",
	bs.DoneContextErrorKeyString:          "context/done_context_admits_nothing",
	bs.DoneContextErrorKeyShortID:         "context/done_context_admits_nothing",
	bs.CleanupNilContextBeforeNegative:    "context/nil_context_is_invalid_input",
	bs.CleanupTypedNilError:               "cleanup/removes_only_expired_counters",
	bs.CancelBetweenWrites:                "context/cancelled_batch_stays_whole_and_keeps_no_slot",
	bs.CancelKeepsClaimedSlots:            "context/cancelled_batch_stays_whole_and_keeps_no_slot",
	bs.NilContextBeforeBatchReady:         "batches/unready_batch_is_reported_before_a_nil_context",
	bs.ReadyAfterClose:                    "readiness/closed_store_is_not_ready",
	bs.ReadyAdmitsProbe:                   "readiness/ready_consumes_nothing",
	bs.SingleCheckSharedReads:             "concurrency/different_keys_racing_each_decide_on_their_own/AdmitCheck",
	bs.ClockReadAfterFirstLock:            "concurrency/batch_reads_the_clock_with_every_lock_held",
	bs.CreatesAfterRelock:                 "concurrency/overlapping_creations_of_new_keys_lose_no_update",
	bs.TTLSetOnCreateOnly:                 "lifetime/renewal_outlives_the_first_windows_rounded_ttl",
	bs.ReadsTTLInWholeMillis:              "lifetime/counter_is_active_to_its_last_microsecond",
	bs.ExpiresAtWholeMillis:               "lifetime/counter_is_active_to_its_last_microsecond",
	bs.BatchTTLFromFirstCheck:             "lifetime/each_key_of_a_batch_keeps_its_own_window",
	bs.CapacityRetryRefreshedTTL:          "retry/capacity_retry_is_the_partitions_earliest_expiry",
	bs.CapacityRetryWholeSeconds:          "retry/capacity_retry_is_the_partitions_earliest_expiry",
	bs.CapacityRetrySamePolicy:            "retry/capacity_retry_is_the_partitions_earliest_expiry",
	bs.ClampsOnlyOnCommit:                 "clamp/a_denial_raises_the_clamp",
	bs.ClampKeepsRawTime:                  "clamp/every_read_after_a_step_back_is_clamped",
	bs.ClampsFirstPartitionOnly:           "clamp/a_batch_clamps_by_every_partition_it_touches",
	bs.SingleCheckOwnClamp:                "clamp/single_checks_and_batches_share_the_clamp",
	bs.BatchCappedAtCapacity:              "spread/batch_larger_than_a_partition_spread_over_partitions_is_admitted",
	bs.DoneContextErrorKeyBytea:           "context/done_context_admits_nothing",
	bs.CleanupFreesSlotOfRenewed:          "concurrency/cleanup_racing_renewals_frees_only_the_slots_it_empties",
	bs.CapacityRetryOwnWindow:             "retry/capacity_retry_counts_every_window",
	bs.CapacityRetryKeptFromLastDenial:    "retry/capacity_retry_of_a_partition_of_expired_counters",
	bs.CapacityRoundedToPowerOfTwo:        "capacity/odd_capacity_is_exact",
	bs.StatsReusesHeadroom:                "stats/a_report_is_a_snapshot",
	bs.StatsCachesReport:                  "stats/a_report_is_a_snapshot",
	bs.CloseReleasesCounters:              "close/close_racing_an_admission_lets_it_finish",
	bs.ClosedErrorIsInvalidInput:          "close/closed_error_is_no_callers_mistake",
	bs.DoneContextCause:                   "context/done_context_with_a_cause_admits_nothing",
	bs.CleanupLowersClamp:                 "clamp/cleanup_keeps_the_clamp",
	bs.KeysByHash64:                       "lookalikes/keys_alike_in_part_keep_counters_of_their_own",
	bs.KeysBySubjectSuffix:                "lookalikes/keys_alike_in_part_keep_counters_of_their_own",
	bs.KeysXorFolded:                      "lookalikes/keys_alike_in_part_keep_counters_of_their_own",
	bs.KeysByFingerprintXorSubject:        "lookalikes/keys_alike_in_part_keep_counters_of_their_own",
	bs.KeysByFingerprintFirstByte:         "lookalikes/keys_alike_in_part_keep_counters_of_their_own",
	bs.NewKeyBySubjectSeen:                "lookalikes/keys_alike_in_part_need_slots_of_their_own",
	bs.NewKeyByHash64Seen:                 "lookalikes/keys_alike_in_part_need_slots_of_their_own",
	bs.TombstonesFillTable:                "churn/cycles_of_create_expire_and_cleanup_keep_every_counter_and_slot",
	bs.ProbeStopsAtDeletedCell:            "churn/cycles_of_create_expire_and_cleanup_keep_every_counter_and_slot",
	bs.SlotFreedTwiceWhenEmpty:            "churn/cycles_of_create_expire_and_cleanup_keep_every_counter_and_slot",
	bs.AllocatorRestartsWhenEmpty:         "churn/cycles_of_create_expire_and_cleanup_keep_every_counter_and_slot",
	bs.CleanupFiltersHeapInPlace:          "churn/retry_time_after_cleanup_is_the_next_earliest_end",
	bs.SingleCheckDecisionBesideError:     "results/an_error_carries_no_decision_and_no_report",
	bs.LateCancelDecisionBesideError:      "results/an_error_carries_no_decision_and_no_report",
	bs.StatsBesideClosedError:             "results/an_error_carries_no_decision_and_no_report",
	bs.SingleCheckErrorUntyped:            "results/invalid_single_check_is_reported_before_its_context",
	bs.NilContextBeforeCheckValidation:    "results/invalid_single_check_is_reported_before_its_context",
	bs.DoneContextBeforeCheckValidation:   "results/invalid_single_check_is_reported_before_its_context",
	bs.DoneContextBeforeBatchReady:        "results/unready_batch_is_reported_before_a_done_context",
	bs.DoneContextErrorMatchesClosed:      "results/an_open_store_never_answers_closed",
	bs.DoneContextErrorKeyLittleEndianHex: "context/done_context_admits_nothing",
	bs.DoneContextErrorKeyDecimal:         "context/done_context_admits_nothing",
	bs.DoneContextErrorKeyWords:           "context/done_context_admits_nothing",
	bs.KeysByInt32Limit:                   "fingerprints/policies_alike_in_part_keep_counters_of_their_own",
	bs.KeysByFloatLimit:                   "fingerprints/policies_alike_in_part_keep_counters_of_their_own",
	bs.KeysByInt32WindowMillis:            "fingerprints/policies_alike_in_part_keep_counters_of_their_own",
	bs.KeysByJoinedText:                   "fingerprints/policies_alike_in_part_keep_counters_of_their_own",
	bs.KeysByUnseparatedFields:            "fingerprints/policies_alike_in_part_keep_counters_of_their_own",
	bs.KeysByFingerprintPrefix:            "fingerprints/policies_alike_in_part_keep_counters_of_their_own",
	bs.KeysByFingerprintSuffix:            "fingerprints/policies_alike_in_part_keep_counters_of_their_own",
	bs.NewKeysClaimBySubject:              "fingerprints/one_subject_new_under_two_policies_needs_two_slots",
	bs.NewKeysClaimByPolicy:               "fingerprints/one_subject_new_under_two_policies_needs_two_slots",
	bs.CleanupRemovesSubject:              "fingerprints/cleanup_of_one_policys_counter_keeps_the_subjects_others",
	bs.ClampToleratesJitter:               "extremes/a_step_back_of_a_microsecond_is_clamped",
	bs.ClampComparesMilliseconds:          "extremes/a_step_back_of_a_microsecond_is_clamped",
	bs.CapacityRetryCappedAtDay:           "extremes/capacity_retry_of_largest_windows_is_exact",
	bs.CapacityRetryFloatUnixMicros:       "extremes/capacity_retry_of_largest_windows_a_microsecond_on_is_exact",
	bs.FloatUnixMicroseconds:              "extremes/largest_window_lasts_to_its_last_microsecond",
	bs.DeadlineFloatUnixSeconds:           "extremes/largest_window_lasts_to_its_last_microsecond",
	bs.FreeSlotsCountedBeforeKeyLocks:     "waits/a_batch_that_waited_for_a_lock_counts_free_slots_after_the_wait",
	bs.CleanupGathersByPartition:          "waits/cleanup_that_waited_for_a_lock_looks_again_before_it_removes",
	bs.CleanupGatherFreesAnyway:           "waits/cleanup_that_waited_for_a_lock_looks_again_before_it_removes",
	bs.CapacityRetryActiveOnly:            "retry/capacity_retry_counts_an_ended_counter",
	bs.BatchRenewalClaimsSlotPerCheck:     "capacity/batch_renewal_leaves_the_free_slot_to_its_new_key",
	bs.StatsEntriesActiveAtLastAdmission:  "stats/entries_agree_with_headroom_after_a_check",
	bs.StatsCachedAfterClose:              "lifecycle/stats_beside_an_error_are_zero",
	bs.StatsBesideContextError:            "lifecycle/stats_beside_an_error_are_zero",
	bs.StatsClosedBeforeNilContext:        "lifecycle/stats_beside_an_error_are_zero",
	bs.StatsContextBeforeClosed:           "lifecycle/stats_beside_an_error_are_zero",
	bs.StatsCountRefusedAdmission:         "lifecycle/refused_calls_leave_stats_alone",
	bs.CleanupCutShortReportsNone:         "lifecycle/cleanup_cut_short_counts_what_it_removed",
	bs.ReadyNilContextNil:                 "lifecycle/readiness_follows_its_context_and_outlives_a_callers",
	bs.ReadyIgnoresDoneContext:            "lifecycle/readiness_follows_its_context_and_outlives_a_callers",
	bs.ReadyStickyAfterCancel:             "lifecycle/readiness_follows_its_context_and_outlives_a_callers",
	bs.ReadyContextBeforeClosed:           "lifecycle/readiness_follows_its_context_and_outlives_a_callers",
	bs.SweepSparesWindowEndingNow:         "sweep/a_window_ending_now_frees_its_slot_like_one_ended_before",
	bs.SweepsFirstCheckOnly:               "sweep/every_check_of_a_batch_frees_ended_slots_of_its_own_partition",

	bs.CleanupMaxNarrowedToInt32:  "extents/cleanup_with_a_maximum_beyond_32_bits_removes_every_expired_counter",
	bs.CapacityRetrySamplesNewest: "extents/capacity_retry_is_the_earliest_end_among_many_counters",
	bs.CleanupReadsUnclampedClock: "clamp/cleanup_reads_the_clamped_time",
	bs.NewKeysJudgedBeforeLocks:   "waits/a_batch_that_waited_while_cleanup_removed_its_key_claims_a_slot_for_it",

	bs.NewKeysJudgedBeforePartitionLocks: "waits/a_batch_that_waited_for_a_cleanup_claims_a_slot_for_the_key_it_removed",
	bs.CleanupChunksWithoutRecheck:       "waits/a_renewal_a_cleanup_let_in_before_it_removed_the_key_is_kept",
	bs.KeysDropControlBytes:              "lookalikes/keys_an_encoding_folds_keep_counters_of_their_own",
	bs.KeysFoldBase64Case:                "lookalikes/keys_an_encoding_folds_keep_counters_of_their_own",
	bs.ClockJoinsSecondsAndMicros:        "time/times_a_few_microseconds_past_a_whole_second_are_read_as_they_are",
	bs.CleanupSkipsAfterRemoval:          "cleanup/one_call_removes_every_expired_counter_up_to_its_maximum",
	bs.BatchStepsPerKeyWithRefund:        "concurrency/a_denied_batch_shows_a_racing_check_none_of_its_units",

	bs.LockOrderBySubjectKey:   "tiers/opposite_order_batches_of_one_subject_under_two_tiers_do_not_deadlock",
	bs.ClampedClockBeforeLocks: "sampling/a_check_that_counts_after_another_sampled_its_clock_after_that_one_wrote",

	bs.ClampRacyReadModifyWrite:        "clampraces/an_admission_racing_a_later_one_never_lowers_the_clamp",
	bs.CancelledCheckGoesOn:            "lockwaits/a_check_cancelled_while_it_waits_for_a_lock_is_answered_truly_and_lets_the_lock_go",
	bs.CancelledWaitKeepsEarlierLocks:  "lockwaits/a_batch_cancelled_while_it_waits_for_a_lock_lets_every_lock_go",
	bs.CancelledWaitDropsLockEntry:     "lockwaits/a_check_cancelled_while_it_waits_for_a_lock_is_answered_truly_and_lets_the_lock_go",
	bs.CancelledWaitKeepsLocks:         "lockwaits/a_check_cancelled_while_it_waits_for_a_lock_is_answered_truly_and_lets_the_lock_go",
	bs.CancelledWaitAnswersNothing:     "lockwaits/a_check_cancelled_while_it_waits_for_a_lock_is_answered_truly_and_lets_the_lock_go",
	bs.CancelledWaitOwnError:           "lockwaits/a_check_cancelled_while_it_waits_for_a_lock_is_answered_truly_and_lets_the_lock_go",
	bs.WritesThroughInversePermutation: "keyorder/a_batch_in_cyclic_key_order_writes_each_key_its_own_count",
	bs.CleanupTakesLastMicrosecond:     "lastmicro/cleanup_keeps_a_counter_in_its_last_microsecond",
	bs.PerCheckTakesLastMicrosecond:    "lastmicro/a_full_partition_keeps_counters_in_their_last_microsecond",
	bs.CleanupLeavesClampBelow:         "cleanupclamp/a_cleanup_raises_the_clamp_to_the_time_it_judged",
	bs.SortsOnlyPairs:                  "lockcycles/batches_of_three_keys_in_rotated_orders_do_not_deadlock",
	bs.StatsLocksPartitionsDescending:  "lockcycles/stats_racing_a_batch_across_partitions_does_not_deadlock",
	bs.BatchRenewalSlides:              "anchoring/a_batch_renewing_active_windows_keeps_where_they_end",
	bs.ClockMutexBeforeLocks:           "sampling/a_cleanup_that_waits_for_a_check_removes_only_what_ended_before_that_check_decided",

	bs.AnswersAtLaterClockRead:     "anchoring/a_batch_anchors_new_windows_at_the_time_it_decided_at",
	bs.AnswersAtFirstAttempt:       "sampling/a_check_answers_from_the_sample_it_counted_at",
	bs.CapacityRetrySkipsBatchKeys: "capacity/full_partition_denies_a_new_key",

	bs.ReplicaCountsOwnSlots:  "replicas/two_replicas_share_the_capacity_bound",
	bs.ReplicaLocksInProcess:  "replicas/overlapping_checks_on_two_replicas_lose_no_update",
	bs.ReplicaCachesOwnWrites: "replicas/interleaved_checks_and_batches_on_two_replicas_share_one_count",
	bs.ReplicaClampsOwnClock:  "replicas/a_replica_whose_clock_is_behind_lengthens_no_retry_time_the_other_reported",
	bs.ReplicaCleansOwnKeys:   "replicas/a_counter_one_replica_cleans_up_is_gone_for_the_other",

	bs.WindowSecondsTruncated:             "windows/short_windows_are_exact",
	bs.TimesFloatSecondsTruncated:         "windows/largest_limit_and_window",
	bs.WindowEndRoundedUpToMillis:         "windows/exact_remaining_and_reset",
	bs.CapacityRetryTruncatedToMillis:     "retry/capacity_retry_is_the_partitions_earliest_expiry",
	bs.OptimisticRetryKeepsOccupancy:      "waits/a_batch_that_starts_again_after_a_conflict_counts_free_slots_as_of_its_write",
	bs.OptimisticRetryDecidesOnFirstRead:  "concurrency/overlapping_checks_on_one_key_lose_no_update",
	bs.OptimisticComparesWindowOnly:       "concurrency/overlapping_checks_on_one_key_lose_no_update",
	bs.WriteBehindStats:                   "stats/occupancy_follows_admissions",
	bs.WriteBehindCleanup:                 "cleanup/removes_only_expired_counters",
	bs.CapacityPerProcess:                 "capacity/each_partition_holds_its_own_bound",
	bs.KeysCutAtNulByte:                   "lookalikes/keys_an_encoding_folds_keep_counters_of_their_own",
	bs.KeysCutTo50Bytes:                   "lookalikes/keys_alike_in_part_keep_counters_of_their_own",
	bs.KeysFoldRawCase:                    "lookalikes/keys_an_encoding_folds_keep_counters_of_their_own",
	bs.StatsCachedPerInstant:              "stats/occupancy_follows_admissions",
	bs.LateCancelDropsWriteAnswersAllowed: "context/cancelled_admission_never_hides_a_unit",
	bs.CleanupCountsSkipped:               "cleanup/a_cleanup_passing_a_held_counter_removes_the_others_it_may",
	bs.CleanupStopsAtLockedKey:            "cleanup/a_cleanup_passing_a_held_counter_removes_the_others_it_may",
	bs.SingleCheckStoresMillis:            "windows/exact_remaining_and_reset/AdmitCheck",
	bs.WriteBehindBatches:                 "paths/single_check_and_batch_of_one_share_a_counter",
	bs.AnchorsAtLastSeenTime:              "windows/renewal_after_expiry_anchors_at_the_renewing_check",
	bs.StatsHeadroomSpread:                "stats/partitions_agree_with_partition_of",
	bs.KeysAsJSONStrings:                  "lookalikes/keys_an_encoding_folds_keep_counters_of_their_own",
	bs.RetryKeepsFirstClock:               "sampling/a_check_answers_from_the_sample_it_counted_at",
	bs.KeysByWindowSeconds:                "windows/counters_independent_per_fingerprint",
	bs.KeysWithoutLimit:                   "fingerprints/policies_alike_in_part_keep_counters_of_their_own",
	bs.KeysWithoutWindow:                  "fingerprints/policies_alike_in_part_keep_counters_of_their_own",
	bs.DoneContextDeadlineOnly:            "context/done_context_admits_nothing",
	bs.DoneContextCanceledOnly:            "context/done_context_admits_nothing",
	bs.SingleCheckIgnoresClose:            "close/closed_store_fails_closed/AdmitCheck",
	bs.SingleCheckIgnoresDoneContext:      "context/done_context_admits_nothing/AdmitCheck",
	bs.StatsCapacityPerPartition:          "stats/occupancy_follows_admissions",
	bs.StatsHeadroomSortedByFill:          "stats/partitions_agree_with_partition_of",
	bs.StatsHeadroomExcludesExpired:       "capacity/expired_counters_hold_their_slots_until_removed",
	bs.StatsShardsNonEmpty:                "harness",
	bs.SharedObservationBuffer:            "concurrency/admissions_of_other_keys_racing_decide_on_their_own_counters",
	bs.DenialRollsBackOwnShardOnly:        "batches/all_or_nothing",
	bs.ClockRefreshedEveryFourth:          "windows/renewal_exactly_at_expiry",
	bs.CleanupSkipsLastPartition:          "cleanup/removes_only_expired_counters",
	bs.ConflictRetryReappliesWrite:        "concurrency/batch_reads_the_clock_with_every_lock_held",
	bs.CapacityClaimsInKeyOrder:           "capacity/denied_batch_keeps_no_slot",

	bs.CleanupStopsAtFirstActive:      "cleanup/removes_only_expired_counters",
	bs.CleanupCutoffTakesTies:         "cleanup/removes_only_expired_counters",
	bs.CleanupOffByOneMax:             "cleanup/removes_only_expired_counters",
	bs.CleanupAtWholeMilliseconds:     "cleanup/removes_only_expired_counters",
	bs.RenewalChargesOneUnit:          "batches/each_check_of_a_batch_counts_its_cost",
	bs.BatchNewKeysChargeOneUnit:      "batches/each_check_of_a_batch_counts_its_cost",
	bs.RenewalInsertIgnoresConflict:   "windows/renewal_exactly_at_expiry",
	bs.StartRoundedUpToMillis:         "windows/short_windows_are_exact",
	bs.RenewalKeepsStart:              "windows/renewal_exactly_at_expiry",
	bs.KeysByPrintedSubject:           "windows/counters_independent_per_fingerprint",
	bs.ConfigColumnsResetOnChange:     "windows/counters_independent_per_fingerprint",
	bs.ModeSwitchResetsCounter:        "shadow/switching_to_enforce_keeps_the_counter",
	bs.ShadowDeniedKeepsClaimedSlots:  "capacity/denied_batch_keeps_no_slot",
	bs.ShadowKeysTakeNoSlot:           "shadow/capacity_denial_never_shadowed",
	bs.PartitionByFingerprintOnly:     "stats/partitions_agree_with_partition_of",
	bs.ExpiredResetBeforeDeciding:     "expiry/batch_renewing_an_expired_key_keeps_its_slot",
	bs.KeysFoldIdentifierCase:         "fingerprints/policies_alike_in_part_keep_counters_of_their_own",
	bs.KeysSanitizeIdentifiers:        "fingerprints/policies_alike_in_part_keep_counters_of_their_own",
	bs.KeysCleanScopePath:             "fingerprints/policies_alike_in_part_keep_counters_of_their_own",
	bs.CapacityPerPolicy:              "fingerprints/one_subject_new_under_two_policies_needs_two_slots",
	bs.BatchInclusiveEnd:              "anchoring/a_batch_renewing_active_windows_keeps_where_they_end",
	bs.LongWindowTTLReadAsAbsolute:    "windows/largest_limit_and_window",
	bs.TTLWholeSecondsDropsEarly:      "windows/short_windows_are_exact",
	bs.ActiveUntilTTLSecond:           "windows/renewal_exactly_at_expiry",
	bs.CleanupByTTLSeconds:            "cleanup/removes_only_expired_counters",
	bs.CleanupCappedAt25PerCall:       "extents/cleanup_removes_more_than_one_backend_batch_in_a_call",
	bs.CreateWithoutAbsentCondition:   "concurrency/overlapping_creations_of_new_keys_lose_no_update",
	bs.IncrementNarrowedToInt32:       "windows/counts_beyond_32_and_53_bits_are_exact",
	bs.StartTruncatedToSeconds:        "windows/exact_remaining_and_reset",
	bs.StatsEntriesDistinctSubjects:   "fingerprints/one_subject_new_under_two_policies_needs_two_slots",
	bs.CapacityCountsDistinctSubjects: "fingerprints/one_subject_new_under_two_policies_needs_two_slots",
	bs.DoneContextMayHaveConsumed:     "context/done_context_admits_nothing",
	bs.TransactionSplitAt25:           "extents/a_full_size_batch_refused_at_its_last_check_counts_nothing",
	bs.ActiveUntilLeaseMinTTL:         "windows/short_windows_are_exact",
	bs.BatchWriteDropsUnprocessed:     "extents/a_full_size_batch_refused_at_its_last_check_counts_nothing",
	bs.WriteBackLRUDropsEvicted:       "concurrency/large_batches_never_wait_on_their_own_locks",
	bs.DenialCacheIgnoresCost:         "denials/quota",
	bs.DenialCachedForRetrySeconds:    "denials/a_quota_denial_lasts_only_until_the_window_ends",
	bs.CleanupReturnsExamined:         "cleanup/removes_only_expired_counters",
	bs.StatsCountsUpsertRowsAffected:  "stats/entries_agree_with_headroom_after_a_check",
	bs.SubjectHashSharedTTL:           "batches/one_subject_under_several_policies",
	bs.ExpireGivenMilliseconds:        "extents/a_full_size_batch_refused_at_its_last_check_counts_nothing",
	bs.BatchPerSlotScripts:            "capacity/each_partition_holds_its_own_bound",
	bs.DenialCacheIgnoresMode:         "shadow/switching_to_enforce_keeps_the_counter",
	bs.CleanupCountsRenewedInPlace:    "capacity/renewals_leave_the_freed_slots_usable",
	bs.MultiWithoutWatch:              "replicas/overlapping_checks_on_two_replicas_lose_no_update",
	bs.StatsFromLaggingReplica:        "stats/occupancy_follows_admissions",
	bs.BatchWritesBySubject:           "batches/one_subject_under_several_policies",
	bs.CounterResurrectsAfterDelete:   "waits/cleanup_that_waited_for_a_lock_looks_again_before_it_removes",
	bs.ScriptRetriedOnColdCache:       "paths/single_check_and_batch_of_one_share_a_counter",
}

// TestBrokenStores runs the suite against every broken store, each as a
// subtest named after its fault. It runs in the child processes of
// TestBrokenStoresAreCaught, one fault each, and skips anywhere else: each
// subtest is meant to fail.
func TestBrokenStores(t *testing.T) {
	t.Parallel()
	if os.Getenv(childEnv) == "" {
		t.Skip("runs only as the child process of TestBrokenStoresAreCaught")
	}
	for _, fault := range bs.Faults() {
		t.Run(fault.String(), func(t *testing.T) {
			t.Parallel()
			conformance.Run(t, harness(fault))
		})
	}
}

// wholeSuite makes each child process of TestBrokenStoresAreCaught run the
// whole suite against its broken store, rather than only the case written
// to catch its fault, and log every case that failed: slower (the whole
// suite once per fault), for a look at what else a fault breaks.
var wholeSuite = flag.Bool("brokenstores.whole", false,
	"run the whole suite against each broken store, not only the case that targets its fault")

// TestBrokenStoresAreCaught proves the suite can fail: each broken store
// must fail the case written for its fault, at the suite's default
// settings. The case runs against each in a child `go test` process (this
// test binary, reading its -test.v output), since a failing suite fails
// the test that runs it, and a deadlocked store leaves goroutines behind.
// Every case runs on a store of its own, so the case fails the same way
// alone as in a run of the whole suite; running it alone keeps the check
// of nearly two hundred faults to a minute rather than five
// (-brokenstores.whole runs the whole suite each time).
func TestBrokenStoresAreCaught(t *testing.T) {
	t.Parallel()
	if os.Getenv(childEnv) != "" {
		t.Skip("already inside a child process")
	}
	require.Len(t, targets, len(bs.Faults()), "every fault needs a target case")
	if raceEnabled {
		// Each fault's child runs the whole suite, and under the race
		// detector nearly two hundred of them outlast a package's test
		// timeout on a two-CPU machine. The detector adds nothing to
		// whether the suite catches a fault (a broken store's own races
		// are its bug, not the suite's): make test runs this without it,
		// and the suite itself runs under -race against the correct
		// stores (TestRunPassesACorrectStore, the adapters' conformance).
		t.Skip("the broken stores run without -race (make test); see the comment")
	}
	for _, fault := range bs.Faults() {
		t.Run(fault.String(), func(t *testing.T) {
			t.Parallel()
			target := targets[fault]
			cases, out, err := runBrokenStore(t, fault, target)
			var exitErr *exec.ExitError
			require.ErrorAs(t, err, &exitErr, "the child process must run the suite and fail:\n%s", out)
			require.NotEmpty(t, cases, "the suite passed a store with fault %s:\n%s", fault, out)
			caught := slices.ContainsFunc(cases, func(c string) bool { return c == target || strings.HasPrefix(c, target+"/") })
			require.True(t, caught, "fault %s was not caught by %s; the suite failed in %v:\n%s", fault, target, cases, out)
			t.Logf("%s: caught by %s; every failing case: %s", fault, target, strings.Join(cases, ", "))
		})
	}
}

// failLine matches a failing case (scenario/case, or scenario/case/path),
// or the harness subtest that probes the store before any case runs, in
// -test.v output.
var failLine = regexp.MustCompile(`(?m)^\s*--- FAIL: TestBrokenStores/\w+/(harness|\S+/\S+) `)

// runBrokenStore runs the suite's case target (scenario/case or
// scenario/case/path), or with -brokenstores.whole the whole suite,
// against the store with fault in a child process, and returns the cases
// that failed, the process's output and its exit error.
func runBrokenStore(t *testing.T, fault bs.Fault, target string) (failed []string, out string, err error) {
	t.Helper()
	run := "^TestBrokenStores$/^" + regexp.QuoteMeta(fault.String()) + "$"
	if !*wholeSuite {
		for _, part := range strings.Split(target, "/") {
			run += "/^" + regexp.QuoteMeta(part) + "$"
		}
	}
	cmd := exec.CommandContext(t.Context(), os.Args[0],
		"-test.run="+run, "-test.v", "-test.count=1", "-test.timeout=2m")
	cmd.Env = append(os.Environ(), childEnv+"=1")
	b, err := cmd.CombinedOutput()
	for _, m := range failLine.FindAllStringSubmatch(string(b), -1) {
		failed = append(failed, m[1])
	}
	slices.Sort(failed)
	return failed, string(b), err
}
