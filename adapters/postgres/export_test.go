package postgres

import "github.com/jackc/pgx/v5/pgxpool"

// SQLCleanup returns the store's cleanup statement, for the test that
// explains its plan.
func (s *Store) SQLCleanup() string { return s.sql.cleanup }

// IsWarm reports whether conn holds the store's prepared statements.
func (s *Store) IsWarm(conn *pgxpool.Conn) bool { return s.stateOf(conn.Conn().PgConn()) != nil }
