package readme_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runlimit/runlimit/internal/readme"
)

// TestEveryGoBlockIsCompiled: every Go block of every Markdown file in the
// repository (the README, the examples' READMEs) is, line for line, part
// of a Go file that go vet and go test compile, the example modules' own
// included: usually an Example whose output go test checks. Indentation is
// ignored, so a block may be a fragment of a function body, and so are the
// comma after a block that is one argument of a call and the return before
// a block that is a returned value. The tests
// beside those Examples hold the blocks to them exactly; this one makes
// sure no block is left to rot without one.
func TestEveryGoBlockIsCompiled(t *testing.T) {
	t.Parallel()
	var sources []string // the non-empty lines of each Go file, trimmed, one string per file
	var markdown []string
	err := filepath.WalkDir("../..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != "../.." && strings.HasPrefix(d.Name(), ".") {
				return filepath.SkipDir
			}
			return nil
		}
		switch filepath.Ext(path) {
		case ".go":
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			sources = append(sources, "\n"+strings.Join(trimmedLines(string(data)), "\n")+"\n")
		case ".md":
			markdown = append(markdown, path)
		}
		return nil
	})
	require.NoError(t, err)
	require.Contains(t, markdown, "../../README.md")

	blocks := 0
	for _, path := range markdown {
		goBlocks, err := readme.Blocks(path, "go")
		require.NoError(t, err)
		for _, block := range goBlocks {
			blocks++
			want := strings.Join(trimmedLines(block), "\n")
			found := false
			for _, src := range sources {
				// An argument of a call, such as an fx option, is followed
				// by a comma there, and a value may be returned.
				for _, form := range []string{"\n" + want + "\n", "\n" + want + ",\n", "\nreturn " + want + "\n"} {
					found = found || strings.Contains(src, form)
				}
				if found {
					break
				}
			}
			require.True(t, found, "%s: this Go block is in no Go file of the repository, so nothing compiles it; make it an Example's body (or part of one) and show that:\n%s", strings.TrimPrefix(path, "../../"), block)
		}
	}
	require.GreaterOrEqual(t, blocks, 13, "the Markdown files' Go blocks were not found")
}

// trimmedLines returns the lines of s that hold more than white space,
// without their leading and trailing white space.
func trimmedLines(s string) []string {
	var out []string
	for _, line := range strings.Split(s, "\n") {
		if line = strings.TrimSpace(line); line != "" {
			out = append(out, line)
		}
	}
	return out
}
