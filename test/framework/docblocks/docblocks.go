package docblocks

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// Files are the documents whose command blocks are all accounted for: the
// ones a user follows to install, run and inspect the operator.
var Files = []string{"README.md", "docs/install.md", "docs/demo.md", "docs/plugin.md"}

// Block is a command block of a Markdown file.
type Block struct {
	File string // as given to Parse
	Line int    // of the opening fence
	Lang string
	Text string // the lines between the fences, their common indentation removed
	// Run is the ID of a run marker; NotRun the reason of a not-run marker.
	// Neither is set on an unmarked block.
	Run, NotRun string
}

// Ref is how a test names the block: <file>::<ID> (not #, which links a
// section).
func (b Block) Ref() string { return b.File + "::" + b.Run }

var (
	fence     = regexp.MustCompile("^(\\s*)```\\s*([A-Za-z]*)\\s*$")
	runMark   = regexp.MustCompile(`^\s*<!--\s*run:\s*([a-z0-9][a-z0-9-]*)\s*-->\s*$`)
	notRunRe  = regexp.MustCompile(`^\s*<!--\s*not run:(.*)-->\s*$`)
	isCommand = map[string]bool{"sh": true, "bash": true, "shell": true, "console": true}
)

// Parse returns the command blocks of the Markdown file root/file.
func Parse(root, file string) ([]Block, error) {
	f, err := os.Open(filepath.Join(root, file))
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	var (
		blocks []Block
		prev   string
		cur    *Block
		indent string
		lines  []string
		n      int
	)
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		n++
		line := sc.Text()
		m := fence.FindStringSubmatch(line)
		switch {
		case cur == nil && m != nil:
			b := &Block{File: file, Line: n, Lang: m[2]}
			if r := runMark.FindStringSubmatch(prev); r != nil {
				b.Run = r[1]
			} else if r := notRunRe.FindStringSubmatch(prev); r != nil {
				b.NotRun = strings.TrimSpace(r[1])
				if b.NotRun == "" {
					b.NotRun = " " // marked, but without a reason: Check reports it
				}
			}
			cur, indent, lines = b, m[1], []string{}
		case cur != nil && m != nil && m[2] == "":
			cur.Text = strings.Join(lines, "\n")
			if isCommand[cur.Lang] {
				blocks = append(blocks, *cur)
			}
			cur, indent, lines = nil, "", nil
		case cur != nil:
			lines = append(lines, strings.TrimPrefix(line, indent))
		}
		prev = line
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if cur != nil {
		return nil, fmt.Errorf("%s:%d: a fence that is never closed", file, cur.Line)
	}
	return blocks, nil
}

// Get returns the block a test names as <file>::<ID>.
func Get(root, ref string) (Block, error) {
	file, id, ok := strings.Cut(ref, "::")
	if !ok {
		return Block{}, fmt.Errorf("%q: want <file>::<ID>", ref)
	}
	blocks, err := Parse(root, file)
	if err != nil {
		return Block{}, err
	}
	for _, b := range blocks {
		if b.Run == id {
			return b, nil
		}
	}
	return Block{}, fmt.Errorf("%s has no command block marked <!-- run: %s -->", file, id)
}

// Commands returns the block's commands as a shell would read them: a
// line ending in a backslash goes on with the next, comments and blank
// lines are dropped, and of a console block only the lines after "$ "
// (what it shows besides is output).
func (b Block) Commands() []string {
	var cmds []string
	var cur strings.Builder
	for _, line := range strings.Split(b.Text, "\n") {
		if b.Lang == "console" && cur.Len() == 0 {
			c, ok := strings.CutPrefix(line, "$ ")
			if !ok {
				continue
			}
			line = c
		}
		if c, ok := strings.CutSuffix(line, "\\"); ok {
			cur.WriteString(c)
			continue
		}
		cur.WriteString(line)
		cmd := strings.TrimSpace(stripComment(cur.String()))
		cur.Reset()
		if cmd != "" {
			cmds = append(cmds, cmd)
		}
	}
	return cmds
}

// stripComment removes a trailing # comment outside quotes.
func stripComment(s string) string {
	var quote rune
	for i, r := range s {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			}
		case r == '\'' || r == '"':
			quote = r
		case r == '#' && (i == 0 || s[i-1] == ' ' || s[i-1] == '\t'):
			return s[:i]
		}
	}
	return s
}
