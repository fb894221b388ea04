// Command docblocks checks that every command block of the documents a
// user follows (docblocks.Files) is either run by a test, which reads it
// from the Markdown (test/framework/docblocks), or marked as not run with
// the reason; make verify runs it. It prints how many blocks each file has
// run and not run.
//
// A run marker counts only when a test or script names its block as
// <file>::<ID> (in e2e/, test/ or hack/); a test naming a block that is not
// there fails here too, before the test would.
//
// With -print <file>::<ID> it prints that block's commands instead, one per
// line, for a script to run (hack/test-demo.sh).
//
// Usage: go run ./hack/docblocks [-print <file>::<ID>]
package main

import (
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/example/myoperator/test/framework/docblocks"
	"github.com/example/myoperator/test/framework/testutil"
)

func main() {
	print := flag.String("print", "", "print the commands of the block <file>::<ID>, one per line")
	flag.Parse()
	root, err := testutil.FindRepoRoot()
	if err != nil {
		fmt.Fprintln(os.Stderr, "docblocks:", err)
		os.Exit(1)
	}
	if *print != "" {
		b, err := docblocks.Get(root, *print)
		if err != nil {
			fmt.Fprintln(os.Stderr, "docblocks:", err)
			os.Exit(1)
		}
		for _, c := range b.Commands() {
			fmt.Println(c)
		}
		return
	}
	problems, summary, err := check(root)
	if err != nil {
		fmt.Fprintln(os.Stderr, "docblocks:", err)
		os.Exit(1)
	}
	for _, s := range summary {
		fmt.Println("docblocks: " + s)
	}
	for _, p := range problems {
		fmt.Fprintln(os.Stderr, "docblocks: "+p)
	}
	if len(problems) > 0 {
		fmt.Fprintln(os.Stderr, "docblocks: mark each command block with <!-- run: ID --> (and run it from a test as <file>::<ID>, test/framework/docblocks) or <!-- not run: why -->")
		os.Exit(1)
	}
}

// refRe finds references to blocks in tests and scripts.
var refRe = regexp.MustCompile(`(README\.md|docs/[a-z0-9-]+\.md)::([a-z0-9][a-z0-9-]*)`)

// check returns every problem, each naming the file and line and the rule,
// and a line per file with its counts.
func check(root string) (problems, summary []string, err error) {
	refs, err := references(root)
	if err != nil {
		return nil, nil, err
	}
	known := map[string]bool{}
	for _, file := range docblocks.Files {
		blocks, err := docblocks.Parse(root, file)
		if err != nil {
			return nil, nil, err
		}
		run, notRun := 0, 0
		ids := map[string]int{}
		for _, b := range blocks {
			at := fmt.Sprintf("%s:%d", file, b.Line)
			switch {
			case b.Run != "":
				if first, dup := ids[b.Run]; dup {
					problems = append(problems, fmt.Sprintf("%s: run marker %q is the one of line %d too; IDs are unique in a file", at, b.Run, first))
				}
				ids[b.Run] = b.Line
				known[b.Ref()] = true
				if len(refs[b.Ref()]) == 0 {
					problems = append(problems, fmt.Sprintf("%s: marked <!-- run: %s --> but no test or script names %s", at, b.Run, b.Ref()))
				}
				run++
			case strings.TrimSpace(b.NotRun) == "" && b.NotRun != "":
				problems = append(problems, fmt.Sprintf("%s: <!-- not run: --> gives no reason", at))
			case b.NotRun != "":
				notRun++
			default:
				problems = append(problems, fmt.Sprintf("%s: %s command block that no test runs and no marker accounts for", at, b.Lang))
			}
		}
		summary = append(summary, fmt.Sprintf("%s: %d command blocks, %d run by tests, %d marked not run", file, len(blocks), run, notRun))
	}
	var dangling []string
	for ref, where := range refs {
		file, _, _ := strings.Cut(ref, "::")
		if !known[ref] && isChecked(file) {
			dangling = append(dangling, fmt.Sprintf("%s names %s, which is no command block marked run", where[0], ref))
		}
	}
	sort.Strings(dangling)
	return append(problems, dangling...), summary, nil
}

func isChecked(file string) bool {
	for _, f := range docblocks.Files {
		if f == file {
			return true
		}
	}
	return false
}

// references maps each <file>::<ID> named in e2e/, test/ and hack/ (Go and
// shell files) to the files naming it.
func references(root string) (map[string][]string, error) {
	refs := map[string][]string{}
	for _, dir := range []string{"e2e", "test", "hack"} {
		err := filepath.WalkDir(filepath.Join(root, dir), func(path string, d fs.DirEntry, err error) error {
			if err != nil && path == filepath.Join(root, dir) && os.IsNotExist(err) {
				return filepath.SkipDir
			}
			if err != nil {
				return err
			}
			if d.IsDir() || !strings.HasSuffix(path, ".go") && !strings.HasSuffix(path, ".sh") {
				return nil
			}
			rel, _ := filepath.Rel(root, path)
			if rel == filepath.Join("test", "framework", "docblocks", "docblocks_test.go") || strings.HasPrefix(rel, filepath.Join("hack", "docblocks")+"/") {
				return nil // the tool's own examples
			}
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			for _, m := range refRe.FindAllStringSubmatch(string(data), -1) {
				refs[m[0]] = append(refs[m[0]], rel)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return refs, nil
}
