package postgres

// SQLCleanup is the cleanup statement, for the test that explains its plan.
const SQLCleanup = sqlCleanup
