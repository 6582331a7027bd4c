// Package fuzzseed names the seed inputs of fuzz targets and keeps them in
// testdata, where `go test` runs them as ordinary tests and `go test -fuzz`
// starts from them.
//
// Add registers a seed with f.Add. With JAKIRO_FUZZ_WRITE_SEEDS=1 it also
// writes the seed to testdata/fuzz/<target>/<name> in the format of Go's
// fuzzing engine, so the corpus of known malformed inputs is a set of
// reviewable files named for what they are:
//
//	JAKIRO_FUZZ_WRITE_SEEDS=1 go test ./rfp -run Fuzz
package fuzzseed
