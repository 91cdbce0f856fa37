-- Room on every page for heap-only updates of a counter.
ALTER TABLE runlimit_fixed_windows SET (fillfactor = 80);
