package httplimit

// Internals the external tests drive directly.
var (
	FoldRune = foldRune
)
