package readme_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

var (
	mdLink    = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	mdHeading = regexp.MustCompile(`(?m)^#+ (.+)$`)
	notAnchor = regexp.MustCompile(`[^\p{L}\p{N}_\- ]`)
)

// TestMarkdownLinksResolve: every relative link of every Markdown file in
// the repository names a file or folder that exists, and every #anchor a
// heading of the file it points into, as GitHub names them (lower case,
// punctuation dropped, spaces as hyphens).
func TestMarkdownLinksResolve(t *testing.T) {
	t.Parallel()
	var broken []string
	err := filepath.WalkDir("../..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != "../.." && strings.HasPrefix(d.Name(), ".") {
			return filepath.SkipDir
		}
		if d.IsDir() || filepath.Ext(path) != ".md" {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range mdLink.FindAllStringSubmatch(string(data), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			file, anchor, _ := strings.Cut(target, "#")
			into := path
			if file != "" {
				into = filepath.Join(filepath.Dir(path), file)
				if _, err := os.Stat(into); err != nil {
					broken = append(broken, strings.TrimPrefix(path, "../../")+": "+target)
					continue
				}
			}
			if anchor != "" && !hasAnchor(t, into, anchor) {
				broken = append(broken, strings.TrimPrefix(path, "../../")+": "+target)
			}
		}
		return nil
	})
	require.NoError(t, err)
	require.Empty(t, broken, "Markdown links to files or headings that do not exist")
}

// hasAnchor reports whether the Markdown file at path has a heading whose
// GitHub anchor is anchor.
func hasAnchor(t *testing.T, path, anchor string) bool {
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	for _, m := range mdHeading.FindAllStringSubmatch(string(data), -1) {
		name := strings.ToLower(strings.TrimSpace(m[1]))
		if strings.ReplaceAll(notAnchor.ReplaceAllString(name, ""), " ", "-") == anchor {
			return true
		}
	}
	return false
}
