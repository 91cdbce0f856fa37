package postgres

import "github.com/jackc/pgx/v5/pgxpool"

// SQLCleanup returns the store's cleanup statement, for the test that
// explains its plan.
func (s *Store) SQLCleanup() string { return s.sql.cleanup }

// IsWarm reports whether conn holds the store's prepared statements.
func (s *Store) IsWarm(conn *pgxpool.Conn) bool { return s.stateOf(conn.Conn().PgConn()) != nil }

// WarmIdle has the store warm its pool's idle connections in the
// background, as it does once a caller's warm-up suggests more are cold.
func (s *Store) WarmIdle() { s.startWarmIdle(false) }

// Pending returns how many calls and goroutines of the store Close waits
// for, and whether Close has begun.
func (s *Store) Pending() (running int, closing bool) {
	b := &s.state().bg
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.running, b.closed
}
