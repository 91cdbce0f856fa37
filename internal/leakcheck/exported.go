package leakcheck

import (
	"go/ast"
	"go/build"
	"go/parser"
	"go/token"
	"path"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// Exported lists what the package in dir exports that a host can print:
// its types, as import path and name ("github.com/x/y.Store"; an alias as
// the type it stands for), and its error variables, as package name and
// name ("y.ErrClosed"). pkgPath is the package's import path. The files
// read are those a build for this platform compiles; test files are not.
func Exported(dir, pkgPath string) (types, errs []string, err error) {
	bp, err := build.ImportDir(dir, 0)
	if err != nil {
		return nil, nil, err
	}
	fset := token.NewFileSet()
	for _, file := range bp.GoFiles {
		f, err := parser.ParseFile(fset, filepath.Join(dir, file), nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, nil, err
		}
		imports := make(map[string]string)
		for _, im := range f.Imports {
			p, _ := strconv.Unquote(im.Path.Value)
			local := path.Base(p)
			if im.Name != nil {
				local = im.Name.Name
			}
			imports[local] = p
		}
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok {
				continue
			}
			for _, spec := range g.Specs {
				switch s := spec.(type) {
				case *ast.TypeSpec:
					if s.Name.IsExported() {
						types = append(types, typeName(s, pkgPath, imports))
					}
				case *ast.ValueSpec:
					for _, n := range s.Names {
						if n.IsExported() && strings.HasPrefix(n.Name, "Err") {
							errs = append(errs, bp.Name+"."+n.Name)
						}
					}
				}
			}
		}
	}
	slices.Sort(types)
	slices.Sort(errs)
	return types, errs, nil
}

// typeName returns the import path and name of the type s declares, or for
// an alias of another package's type (type A = pkg.B) that type's.
func typeName(s *ast.TypeSpec, pkgPath string, imports map[string]string) string {
	if sel, ok := s.Type.(*ast.SelectorExpr); ok && s.Assign.IsValid() {
		if x, ok := sel.X.(*ast.Ident); ok && imports[x.Name] != "" {
			return imports[x.Name] + "." + sel.Sel.Name
		}
	}
	return pkgPath + "." + s.Name.Name
}

// named returns the named types t is built from: itself, or what an
// unnamed pointer, slice, array, map or channel holds.
func named(t reflect.Type) []string {
	if t.Name() != "" {
		return []string{t.PkgPath() + "." + t.Name()}
	}
	switch t.Kind() {
	case reflect.Pointer, reflect.Slice, reflect.Array, reflect.Chan:
		return named(t.Elem())
	case reflect.Map:
		return append(named(t.Key()), named(t.Elem())...)
	}
	return nil
}

// RequireEveryType fails t unless cases print a value of every type the
// package in dir exports (by a case's Type, looking through pointers,
// slices and maps) and every error variable it exports (by a case named
// as [Exported] names it, such as "memory.ErrClosed"). A type added to
// the package without a case fails the test that should print it.
func RequireEveryType(t testing.TB, dir, pkgPath string, cases []Case) {
	t.Helper()
	types, errs, err := Exported(dir, pkgPath)
	if err != nil {
		t.Fatalf("leakcheck: read %s: %v", dir, err)
	}
	if len(types) == 0 {
		t.Fatalf("leakcheck: %s exports no type: is it the directory of %s?", dir, pkgPath)
	}
	covered := make(map[string]bool)
	for _, c := range cases {
		if c.Type != nil {
			for _, n := range named(c.Type) {
				covered[n] = true
			}
		}
		covered[c.Name] = true
	}
	var missing []string
	for _, name := range append(types, errs...) {
		if !covered[name] {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		t.Fatalf("leakcheck: no case prints %s", strings.Join(missing, ", "))
	}
}
