package readme_test

import (
	"go/ast"
	"go/doc"
	"go/doc/comment"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// linkLike matches the doc links of Go doc comments ([Name], [Name.Member],
// [*Name], [pkg.Name], [path/to/pkg.Name.Member]) in text go/doc left
// plain: the ones that do not resolve, which go doc and pkg.go.dev print
// with their brackets instead of linking.
var linkLike = regexp.MustCompile(`\[\*?(?:[A-Z]\w*(?:\.\w+)?|[a-z][\w.]*(?:/[\w.-]+)*\.[A-Z]\w*(?:\.\w+)?)\]`)

// unexportedLike matches a doc link to a name of the package's own that
// starts in lower case ([name], [*name], [name.Member]); it is broken when
// the package declares that unexported name.
var unexportedLike = regexp.MustCompile(`\[\*?([a-z_]\w*)(?:\.\w+)?\]`)

// TestDocLinksResolve: every doc link in the documentation of an exported
// name, in every package of the repository (the example modules' too),
// names something that exists, as go doc resolves it: the package's own
// names, or a package the file imports. A link to an unexported name, or
// to a package the file does not import, shows as bracketed text: a
// reader of go doc or pkg.go.dev sees [cleanupChunk] and cannot follow it.
func TestDocLinksResolve(t *testing.T) {
	t.Parallel()
	var broken []string
	err := eachDocPackage(func(path string) string { return "example.test/" + filepath.ToSlash(path) }, func(path string, dp *doc.Package, unexported map[string]bool) {
		for where, text := range exportedDocs(dp) {
			for _, s := range plainText(dp.Parser().Parse(text)) {
				for _, m := range linkLike.FindAllString(s, -1) {
					broken = append(broken, strings.TrimPrefix(filepath.ToSlash(path), "../../")+": "+where+": "+m)
				}
				for _, m := range unexportedLike.FindAllStringSubmatch(s, -1) {
					// "[redacted]" is the text redacting printers write, and
					// its constant's name: not a link.
					if unexported[m[1]] && m[0] != "[redacted]" {
						broken = append(broken, strings.TrimPrefix(filepath.ToSlash(path), "../../")+": "+where+": "+m[0]+" (unexported)")
					}
				}
			}
		}
	})
	require.NoError(t, err)
	require.Empty(t, broken, "doc links that do not resolve: link to an exported name, qualify it with an imported package, or drop the brackets")
}

// eachDocPackage calls visit with the go/doc package of every package of
// the repository (the example modules' too), its test files left out,
// named by the import path importPath gives its directory, and the
// unexported names the package declares at top level.
func eachDocPackage(importPath func(dir string) string, visit func(dir string, dp *doc.Package, unexported map[string]bool)) error {
	return filepath.WalkDir("../..", func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		if name := d.Name(); path != "../.." && (name == "testdata" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
			return filepath.SkipDir
		}
		fset := token.NewFileSet()
		pkgs, err := parsePackages(fset, path)
		if err != nil {
			return err
		}
		for _, files := range pkgs {
			unexported := unexportedNames(files) // before go/doc drops them
			dp, err := doc.NewFromFiles(fset, files, importPath(path))
			if err != nil {
				return err
			}
			visit(path, dp, unexported)
		}
		return nil
	})
}

// unexportedNames returns the unexported names files declare at top level:
// functions, types, constants and variables.
func unexportedNames(files []*ast.File) map[string]bool {
	names := map[string]bool{}
	add := func(id *ast.Ident) {
		if id != nil && !id.IsExported() && id.Name != "_" {
			names[id.Name] = true
		}
	}
	for _, f := range files {
		for _, decl := range f.Decls {
			switch d := decl.(type) {
			case *ast.FuncDecl:
				if d.Recv == nil {
					add(d.Name)
				}
			case *ast.GenDecl:
				for _, spec := range d.Specs {
					switch sp := spec.(type) {
					case *ast.TypeSpec:
						add(sp.Name)
					case *ast.ValueSpec:
						for _, id := range sp.Names {
							add(id)
						}
					}
				}
			}
		}
	}
	return names
}

// parsePackages parses the Go files of dir but its tests, with their
// comments, by package name.
func parsePackages(fset *token.FileSet, dir string) (map[string][]*ast.File, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	pkgs := map[string][]*ast.File{}
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, parser.ParseComments)
		if err != nil {
			return nil, err
		}
		pkgs[f.Name.Name] = append(pkgs[f.Name.Name], f)
	}
	return pkgs, nil
}

// exportedDocs returns the doc comments of dp's exported names, with
// their struct fields and interface methods, by where they are.
func exportedDocs(dp *doc.Package) map[string]string {
	docs := map[string]string{"package " + dp.Name: dp.Doc}
	values := func(vs []*doc.Value) {
		for _, v := range vs {
			docs[strings.Join(v.Names, ", ")] = v.Doc
		}
	}
	funcs := func(fs []*doc.Func) {
		for _, f := range fs {
			docs[f.Name] = f.Doc
		}
	}
	values(dp.Consts)
	values(dp.Vars)
	funcs(dp.Funcs)
	for _, t := range dp.Types {
		docs[t.Name] = t.Doc
		values(t.Consts)
		values(t.Vars)
		funcs(t.Funcs)
		for _, m := range t.Methods {
			docs[t.Name+"."+m.Name] = m.Doc
		}
		for _, spec := range t.Decl.Specs {
			ts, ok := spec.(*ast.TypeSpec)
			if !ok || ts.Name.Name != t.Name {
				continue
			}
			var members *ast.FieldList
			switch x := ts.Type.(type) {
			case *ast.StructType:
				members = x.Fields
			case *ast.InterfaceType:
				members = x.Methods
			}
			if members == nil {
				continue
			}
			for _, f := range members.List {
				if f.Doc != nil && len(f.Names) > 0 && f.Names[0].IsExported() {
					docs[t.Name+"."+f.Names[0].Name] = f.Doc.Text()
				}
			}
		}
	}
	return docs
}

// eachText calls texts with the text of every paragraph, heading and list
// item of d: everything but code blocks.
func eachText(d *comment.Doc, texts func([]comment.Text)) {
	for _, b := range d.Content {
		switch x := b.(type) {
		case *comment.Paragraph:
			texts(x.Text)
		case *comment.Heading:
			texts(x.Text)
		case *comment.List:
			for _, item := range x.Items {
				for _, c := range item.Content {
					if p, ok := c.(*comment.Paragraph); ok {
						texts(p.Text)
					}
				}
			}
		}
	}
}

// plainText returns the text of d that go/doc did not make a link, leaving
// out code blocks.
func plainText(d *comment.Doc) []string {
	var out []string
	texts := func(ts []comment.Text) {
		for _, t := range ts {
			switch x := t.(type) {
			case comment.Plain:
				out = append(out, string(x))
			case comment.Italic:
				out = append(out, string(x))
			}
		}
	}
	eachText(d, texts)
	return out
}
