package migrations_test

import (
	"fmt"
	"log"
	"strings"

	"github.com/runlimit/runlimit/migrations"
)

// Vendor the schema into a host's own migration history: each step's SQL,
// rendered for the schema the services name in postgres.Config.Schema,
// with every object qualified by it. No database is needed.
func ExampleSQL() {
	steps, err := migrations.SQL("limits")
	if err != nil {
		log.Fatal(err)
	}
	for _, step := range steps {
		fmt.Println(step.Version, step.Name)
	}
	fmt.Println(strings.Contains(steps[0].Up, `"limits".runlimit_fixed_windows`))
	// Output:
	// 1 001_fixed_windows.sql
	// 2 002_capacity_ledger.sql
	// 3 003_lock_counter.sql
	// 4 004_pinned_names.sql
	// 5 005_runlimit_names.sql
	// 6 006_lock_counter.sql
	// 7 007_trigger_functions.sql
	// true
}
