// Package docblocks reads the command blocks of the project's Markdown, so
// that a test runs what a document tells its reader to run, not a copy that
// could drift from it.
//
// A command block is a fenced block in sh, bash, shell or console. The line
// right before its fence says what becomes of it:
//
//	<!-- run: ID -->           a test runs it; the test names it <file>::<ID>
//	<!-- not run: REASON -->   no test runs it, and why (say, "needs a real registry")
//
// hack/docblocks (make verify) fails on a command block with neither, on a
// run marker no test names, and on a test naming a block that is not there.
package docblocks
