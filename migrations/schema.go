package migrations

import (
	"errors"
	"fmt"
	"strings"
)

// DefaultSchema is the schema Runlimit's objects live in when none is named.
const DefaultSchema = "public"

// MaxSchemaLength is the longest schema name PostgreSQL keeps whole
// (NAMEDATALEN - 1 bytes); it would silently cut a longer one.
const MaxSchemaLength = 63

// ErrInvalidSchema is matched by every error of [CheckSchema].
var ErrInvalidSchema = errors.New("runlimit: invalid schema name")

// CheckSchema reports whether name can hold Runlimit's objects: 1 to 63
// ASCII letters, digits and underscores, not starting with a digit, and not
// starting with "pg_", a prefix PostgreSQL reserves (pg_temp would reach the
// session's temporary schema). The name is used as written, case included:
// it is always quoted. The narrow alphabet keeps the name inert wherever the
// migrations put it, function bodies included.
func CheckSchema(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("%w: it is empty", ErrInvalidSchema)
	case len(name) > MaxSchemaLength:
		return fmt.Errorf("%w: it is %d bytes long, want at most %d", ErrInvalidSchema, len(name), MaxSchemaLength)
	case name[0] >= '0' && name[0] <= '9':
		return fmt.Errorf("%w: it starts with a digit", ErrInvalidSchema)
	case strings.HasPrefix(strings.ToLower(name), "pg_"):
		return fmt.Errorf("%w: names starting with pg_ belong to PostgreSQL", ErrInvalidSchema)
	}
	for i := range len(name) {
		c := name[i]
		if c != '_' && (c < 'a' || c > 'z') && (c < 'A' || c > 'Z') && (c < '0' || c > '9') {
			return fmt.Errorf("%w: byte %d is not an ASCII letter, digit or underscore", ErrInvalidSchema, i)
		}
	}
	return nil
}

// resolve returns the schema name meant by name: [DefaultSchema] for "",
// otherwise name once [CheckSchema] accepts it.
func resolve(name string) (string, error) {
	if name == "" {
		return DefaultSchema, nil
	}
	if err := CheckSchema(name); err != nil {
		return "", err
	}
	return name, nil
}
