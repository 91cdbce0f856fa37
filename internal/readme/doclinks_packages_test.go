package readme_test

import (
	"go/ast"
	"go/doc"
	"go/doc/comment"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// modules maps the repository's module folders to their module paths.
var modules = map[string]string{
	"../..":                       "github.com/runlimit/runlimit",
	"../../benchmarks":            "github.com/runlimit/runlimit/benchmarks",
	"../../examples/loginservice": "github.com/runlimit/runlimit/examples/loginservice",
}

// TestDocLinksToOtherPackagesResolve: a doc link into another of the
// repository's packages ([memory.Config], [wiring.Config.Migrate]) names
// something that package declares. go/doc links such a link whenever the
// file imports the package, without looking into it, so a misspelt or
// removed name would show on pkg.go.dev as a link to nowhere;
// TestDocLinksResolve catches only links go/doc leaves plain.
func TestDocLinksToOtherPackagesResolve(t *testing.T) {
	t.Parallel()
	pkgs := map[string]*doc.Package{} // by import path
	err := eachDocPackage(importPath, func(_ string, dp *doc.Package, _ map[string]bool) { pkgs[dp.ImportPath] = dp })
	require.NoError(t, err)
	require.Contains(t, pkgs, "github.com/runlimit/runlimit/adapters/memory")

	declared := map[string]map[string]bool{}
	for path, dp := range pkgs {
		declared[path] = declaredNames(dp)
	}
	links := 0
	var broken []string
	for path, dp := range pkgs {
		for where, text := range exportedDocs(dp) {
			for _, l := range docLinks(dp.Parser().Parse(text)) {
				names, ours := declared[l.ImportPath]
				if !ours || l.ImportPath == path || l.Name == "" {
					continue
				}
				links++
				name := l.Name
				if l.Recv != "" {
					name = l.Recv + "." + l.Name
				}
				if !names[name] {
					broken = append(broken, strings.TrimPrefix(path, "github.com/runlimit/runlimit/")+": "+where+": ["+l.ImportPath+"."+name+"]")
				}
			}
		}
	}
	require.Empty(t, broken, "doc links to names their package does not declare")
	require.Greater(t, links, 50, "the links between the repository's packages were not found")
}

// importPath returns the import path of the package in dir.
func importPath(dir string) string {
	best := ""
	for m := range modules {
		if (dir == m || strings.HasPrefix(dir, m+"/")) && len(m) > len(best) {
			best = m
		}
	}
	return modules[best] + strings.TrimPrefix(filepath.ToSlash(dir), best)
}

// declaredNames returns the names a doc link may name in dp: its exported
// constants, variables, functions and types, and each type's methods and
// fields as Type.Name.
func declaredNames(dp *doc.Package) map[string]bool {
	names := map[string]bool{}
	values := func(vs []*doc.Value) {
		for _, v := range vs {
			for _, n := range v.Names {
				names[n] = true
			}
		}
	}
	values(dp.Consts)
	values(dp.Vars)
	for _, f := range dp.Funcs {
		names[f.Name] = true
	}
	for _, t := range dp.Types {
		names[t.Name] = true
		values(t.Consts)
		values(t.Vars)
		for _, f := range t.Funcs {
			names[f.Name] = true
		}
		for _, m := range t.Methods {
			names[t.Name+"."+m.Name] = true
		}
		for _, spec := range t.Decl.Specs {
			ts, ok := spec.(*ast.TypeSpec)
			if !ok {
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
				for _, n := range f.Names {
					names[t.Name+"."+n.Name] = true
				}
				if len(f.Names) == 0 { // embedded: its name is the type's
					e := f.Type
					if star, ok := e.(*ast.StarExpr); ok {
						e = star.X
					}
					switch x := e.(type) {
					case *ast.Ident:
						names[t.Name+"."+x.Name] = true
					case *ast.SelectorExpr:
						names[t.Name+"."+x.Sel.Name] = true
					}
				}
			}
		}
	}
	return names
}

// docLinks returns the doc links of d, code blocks left out.
func docLinks(d *comment.Doc) []*comment.DocLink {
	var out []*comment.DocLink
	var texts func(ts []comment.Text)
	texts = func(ts []comment.Text) {
		for _, t := range ts {
			switch x := t.(type) {
			case *comment.DocLink:
				out = append(out, x)
			case *comment.Link:
				texts(x.Text)
			}
		}
	}
	eachText(d, texts)
	return out
}
