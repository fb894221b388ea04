// Command checkrefs fails when a Markdown file or a Go comment of the
// repository points at a file that is not there: every relative Markdown
// link, and every repository path cited in backticks, in a fenced block or
// in a Go comment, must exist. It also fails on a reference to an issue
// number in any tracked file: a reader of the repository has no tracker.
// make verify runs it from the repository's root, so that moving or
// renaming a file cannot leave a stale reference.
//
// Not checked: RELEASES.md and test/bench/results/, which record what was
// true when they were written, bundle/releases/, frozen copies of
// released bundles, and for issue numbers this tool's own folder.
package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
)

// skipped are the records of the past, which keep the paths of their day.
var skipped = []string{"RELEASES.md", "test/bench/results/", "bundle/releases/"}

var (
	// link is a Markdown link or image: [text](target).
	link = regexp.MustCompile(`\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)
	// code is an inline code span.
	code = regexp.MustCompile("`([^`\n]+)`")
	// repoPath is a path under one of the repository's top-level folders,
	// or one of its top-level files, not preceded by a character that
	// makes it part of a longer path (a Go import path, a URL).
	repoPath = regexp.MustCompile(`(?:^|[\s("'=,:\[` + "`" + `])(\.?\.?/?(?:apis|internal|reconcile|bootstrap|initcontainer|guestbookserver|config|e2e|test|hack|docs|bundle|\.ci)/[\w./-]*|(?:\.\./)*[\w-]+\.md|Makefile|Dockerfile|go\.mod|main\.go|bundle\.Dockerfile|guestbook\.Dockerfile)`)
	// issue is a reference to a tracker's issue by number.
	issue = regexp.MustCompile(`(?i)\bissues? #?([0-9]+)(?:[^0-9-]|$)`)
	// upper is a path segment to fill in (NS, NAME, vX.Y.Z).
	upper = regexp.MustCompile(`^v?[A-Z][A-Z0-9_.-]*$`)
	// extension marks a name as a file rather than a Go identifier.
	extension = regexp.MustCompile(`\.(go|md|ya?ml|sh|json|jsonl|txt|svg|mod|sum|tmpl|Dockerfile)$`)
)

type finding struct {
	file string
	line int
	ref  string
}

func main() {
	files, err := gitFiles("*.md", "*.go")
	if err != nil {
		fmt.Fprintln(os.Stderr, "checkrefs:", err)
		os.Exit(2)
	}
	var bad []finding
	for _, f := range files {
		if skip(f) {
			continue
		}
		var fs []finding
		switch {
		case strings.HasSuffix(f, ".md"):
			fs, err = checkMarkdown(f)
		case strings.HasSuffix(f, ".go"):
			fs, err = checkGo(f)
		default:
			continue
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "checkrefs:", err)
			os.Exit(2)
		}
		bad = append(bad, fs...)
	}
	issues, err := checkIssues()
	if err != nil {
		fmt.Fprintln(os.Stderr, "checkrefs:", err)
		os.Exit(2)
	}
	for _, b := range bad {
		fmt.Printf("checkrefs: %s:%d: %s does not exist\n", b.file, b.line, b.ref)
	}
	for _, b := range issues {
		fmt.Printf("checkrefs: %s:%d: %q cites an issue number; say what was built instead\n", b.file, b.line, b.ref)
	}
	if len(bad) > 0 || len(issues) > 0 {
		fmt.Printf("checkrefs: %d references to files that are not in the repository, %d to issue numbers\n", len(bad), len(issues))
		os.Exit(1)
	}
}

// gitFiles are the files of the tree (committed or not, not ignored) that
// match the patterns (all with none).
func gitFiles(patterns ...string) ([]string, error) {
	out, err := exec.Command("git", append([]string{"ls-files", "--cached", "--others", "--exclude-standard", "--"}, patterns...)...).Output()
	if err != nil {
		return nil, fmt.Errorf("git ls-files: %w", err)
	}
	var files []string
	for f := range strings.FieldsSeq(string(out)) {
		if _, err := os.Stat(f); err == nil {
			files = append(files, f)
		}
	}
	return files, nil
}

func skip(f string) bool {
	for _, s := range skipped {
		if f == s || strings.HasPrefix(f, s) {
			return true
		}
	}
	return false
}

// checkIssues finds issue numbers in every text file of the tree.
func checkIssues() ([]finding, error) {
	files, err := gitFiles()
	if err != nil {
		return nil, err
	}
	var bad []finding
	for _, f := range files {
		if skip(f) || strings.HasPrefix(f, "hack/checkrefs/") {
			continue
		}
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		if strings.IndexByte(string(data), 0) >= 0 {
			continue // not text
		}
		for i, line := range strings.Split(string(data), "\n") {
			for _, m := range issue.FindAllString(line, -1) {
				bad = append(bad, finding{f, i + 1, strings.TrimRight(m, " .,;:)")})
			}
		}
	}
	return bad, nil
}

// checkMarkdown checks relative links everywhere, and cited paths in code
// spans and fenced blocks.
func checkMarkdown(f string) ([]finding, error) {
	file, err := os.Open(f)
	if err != nil {
		return nil, err
	}
	defer func() { _ = file.Close() }()
	var bad []finding
	fenced := false
	sc := bufio.NewScanner(file)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		if fenced {
			bad = append(bad, checkCited(f, n, line)...)
			continue
		}
		for _, m := range link.FindAllStringSubmatch(line, -1) {
			if ref := linkTarget(m[1]); ref != "" && !linked(f, ref) {
				bad = append(bad, finding{f, n, ref})
			}
		}
		for _, m := range code.FindAllStringSubmatch(line, -1) {
			bad = append(bad, checkCited(f, n, m[1])...)
		}
	}
	return bad, sc.Err()
}

// linkTarget is the file a link points at, "" for one outside the
// repository or within the same page.
func linkTarget(t string) string {
	if strings.Contains(t, "://") || strings.HasPrefix(t, "mailto:") || strings.HasPrefix(t, "#") {
		return ""
	}
	t, _, _ = strings.Cut(t, "#")
	return t
}

// linked reports whether a link's target exists where a Markdown viewer
// looks for it: relative to the linking file's folder, or to the
// repository's root for a target that starts with "/".
func linked(from, ref string) bool {
	p := filepath.Join(filepath.Dir(from), ref)
	if strings.HasPrefix(ref, "/") {
		p = strings.TrimPrefix(ref, "/")
	}
	_, err := os.Stat(p)
	return err == nil
}

// checkGo reads the comments of a Go file line by line: the text after
// "//" (outside a string) and within /* */.
func checkGo(f string) ([]finding, error) {
	data, err := os.ReadFile(f)
	if err != nil {
		return nil, err
	}
	var bad []finding
	block := false
	for i, line := range strings.Split(string(data), "\n") {
		var comment string
		switch {
		case block:
			comment, block = untilBlockEnd(line)
		default:
			trimmed := strings.TrimSpace(line)
			switch {
			case strings.HasPrefix(trimmed, "//"):
				comment = trimmed[2:]
			case strings.HasPrefix(trimmed, "/*"):
				comment, block = untilBlockEnd(trimmed[2:])
			default:
				// A comment after code on the same line.
				if idx := strings.Index(line, " // "); idx >= 0 && strings.Count(line[:idx], `"`)%2 == 0 && strings.Count(line[:idx], "`")%2 == 0 {
					comment = line[idx+4:]
				}
			}
		}
		if comment != "" && !strings.HasPrefix(strings.TrimSpace(comment), "+") {
			bad = append(bad, checkCited(f, i+1, comment)...)
		}
	}
	return bad, nil
}

func untilBlockEnd(s string) (string, bool) {
	if idx := strings.Index(s, "*/"); idx >= 0 {
		return s[:idx], false
	}
	return s, true
}

// checkCited checks every repository path named in text.
func checkCited(f string, n int, text string) []finding {
	var bad []finding
	for _, m := range repoPath.FindAllStringSubmatch(text, -1) {
		ref := clean(m[1])
		if ref == "" || placeholder(ref) {
			continue
		}
		if !exists(f, ref) && !identifier(f, ref) {
			bad = append(bad, finding{f, n, ref})
		}
	}
	return bad
}

// clean drops what ends a sentence or a Go package pattern.
func clean(ref string) string {
	ref = strings.TrimSuffix(ref, "/...")
	ref = strings.TrimRight(ref, ".,;:")
	return ref
}

// placeholder is a path with a part to fill in, or one that exists only
// after a build.
func placeholder(ref string) bool {
	if strings.HasPrefix(ref, "/") || strings.ContainsAny(ref, "<>*$%{}") {
		return true // an API server's URL path, or a pattern
	}
	for _, seg := range strings.Split(ref, "/") {
		if upper.MatchString(seg) || strings.EqualFold(strings.TrimPrefix(seg, "v"), "x.y.z") {
			return true
		}
	}
	return false
}

// exists looks for ref relative to the repository's root and to the
// citing file's folder.
func exists(from, ref string) bool {
	for _, p := range []string{ref, filepath.Join(filepath.Dir(from), ref)} {
		if _, err := os.Stat(p); err == nil {
			return true
		}
	}
	return false
}

// identifier accepts a package path followed by a Go identifier
// (internal/app.New) when the package folder exists.
func identifier(from, ref string) bool {
	if extension.MatchString(ref) {
		return false
	}
	idx := strings.LastIndex(ref, ".")
	if idx <= 0 || strings.Contains(ref[idx:], "/") {
		return false
	}
	return exists(from, ref[:idx])
}
