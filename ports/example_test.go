package ports_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/runlimit/runlimit/domain"
	"github.com/runlimit/runlimit/ports"
)

// commitUnknown stands for a store's error after a commit whose outcome
// it could not learn, such as a PostgreSQL connection lost after COMMIT
// was sent.
type commitUnknown struct{}

func (commitUnknown) Error() string              { return "store: commit outcome unknown" }
func (commitUnknown) MayHaveConsumedQuota() bool { return true }

// Decide what a failed check means for the caller: every error fails
// closed, and MayHaveConsumedQuota says whether a retry could count the
// request twice.
func ExampleMayHaveConsumedQuota() {
	_, invalid := domain.ParsePolicy("auth.login", "client", 0, time.Minute) // a limit of 0
	for _, err := range []error{
		invalid,                  // the caller's mistake: nothing reached the store
		ports.ErrClosed,          // a closed store consumed nothing
		commitUnknown{},          // the store's own answer
		context.DeadlineExceeded, // an error that says nothing: assumed consumed
	} {
		fmt.Printf("invalid input %t, may have consumed %t\n",
			errors.Is(err, domain.ErrInvalidInput), ports.MayHaveConsumedQuota(err))
	}
	// Output:
	// invalid input true, may have consumed false
	// invalid input false, may have consumed false
	// invalid input false, may have consumed true
	// invalid input false, may have consumed true
}
