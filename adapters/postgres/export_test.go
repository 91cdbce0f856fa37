package postgres

// SQLCleanup is the cleanup statement, for the test that explains its plan.
const SQLCleanup = sqlCleanup

// DecodeRecord is decodeRecord, for its table test.
var DecodeRecord = decodeRecord
