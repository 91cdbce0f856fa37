package leakcheck_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/internal/leakcheck"
)

const exportedPath = "example.test/exported"

// kept has the name of the test package's exported Kept, but not its
// package: it does not cover it.
type kept struct{}

func TestExportedListsTypesAliasesAndErrors(t *testing.T) {
	t.Parallel()
	types, errs, err := leakcheck.Exported("testdata/exported", exportedPath)
	require.NoError(t, err)
	require.Equal(t, []string{exportedPath + ".Kept", "strings.Builder"}, types)
	require.Equal(t, []string{"exported.ErrGone"}, errs)
}

func TestRequireEveryTypeNamesWhatNoCasePrints(t *testing.T) {
	t.Parallel()
	r := &fatalRecorder{TB: t}
	leakcheck.RequireEveryType(r, "testdata/exported", exportedPath, []leakcheck.Case{
		leakcheck.Value("a pointer to the alias's type", &strings.Builder{}),
		leakcheck.Value("a look-alike", kept{}),
	})
	require.Len(t, r.failed, 1)
	require.Contains(t, r.failed[0], exportedPath+".Kept")
	require.Contains(t, r.failed[0], "exported.ErrGone")
	require.NotContains(t, r.failed[0], "strings.Builder")

	r = &fatalRecorder{TB: t}
	leakcheck.RequireEveryType(r, "testdata/exported", exportedPath, []leakcheck.Case{
		{Name: "exported.ErrGone"},
		{Name: "in a map", Type: reflect.TypeFor[map[string]*strings.Builder]()},
	})
	require.Len(t, r.failed, 1)
	require.NotContains(t, r.failed[0], "ErrGone")
	require.NotContains(t, r.failed[0], "strings.Builder")
}

// A Case also prints its type's zero value and a nil pointer to it.
func TestValueChecksTheZeroValuePrints(t *testing.T) {
	t.Parallel()
	r := &fatalRecorder{TB: t}
	p := 7
	leakcheck.Value("a panicky value that prints", panicky{p: &p}).Run(r)
	require.NotEmpty(t, r.failed, "its zero value panics in String")
}
