package operanddiff

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode"
)

// contentRoots are the top-level fields that hold what a writer sets of an
// operand beside its metadata: a workload's or Service's spec, a
// ConfigMap's data. Status is left out: other controllers write it, and an
// upgrade that rolls pods changes it anyway.
var contentRoots = []string{"spec", "data", "binaryData"}

// Flatten turns an object, as JSON decodes it or
// runtime.DefaultUnstructuredConverter.ToUnstructured returns it, into the
// fields a writer of an operand sets, by path, each with its value as
// JSON:
//
//   - metadata.labels[<key>] and metadata.annotations[<key>];
//   - metadata.ownerReferences[<i>].<field>;
//   - metadata.managedFields[<manager>/<operation>], present (true) while
//     that manager has an entry with that operation: a manager joining or
//     leaving is a changed path, what it owns is not (its fields are);
//   - every leaf under spec, data and binaryData, as in
//     spec.template.spec.containers[0].image or data[config.yaml].
//
// The metadata the API server keeps (uid, resourceVersion, generation,
// timestamps) and status are left out: they change with every write or
// without one.
func Flatten(obj map[string]any) map[string]string {
	out := map[string]string{}
	meta, _ := obj["metadata"].(map[string]any)
	for _, field := range []string{"labels", "annotations"} {
		m, _ := meta[field].(map[string]any)
		for k, v := range m {
			out["metadata."+field+"["+k+"]"] = jsonValue(v)
		}
	}
	if refs, ok := meta["ownerReferences"]; ok {
		walk(out, "metadata.ownerReferences", refs)
	}
	for _, m := range managers(meta) {
		out["metadata.managedFields["+m+"]"] = "true"
	}
	for _, root := range contentRoots {
		if v, ok := obj[root]; ok {
			walk(out, root, v)
		}
	}
	return out
}

// managers are the <manager>/<operation> pairs of an object's
// managedFields. Entries of one pair for several subresources (the main
// resource and status) count once: status is not compared.
func managers(meta map[string]any) []string {
	entries, _ := meta["managedFields"].([]any)
	var out []string
	for _, e := range entries {
		m, _ := e.(map[string]any)
		manager, _ := m["manager"].(string)
		operation, _ := m["operation"].(string)
		out = append(out, manager+"/"+operation)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// walk records every leaf of v under path: list elements by index, map
// entries by key. An empty map or list is a leaf of its own, so that one
// appearing or going away is a change too.
func walk(out map[string]string, path string, v any) {
	switch v := v.(type) {
	case map[string]any:
		if len(v) == 0 {
			out[path] = "{}"
		}
		for k, e := range v {
			walk(out, path+keySegment(k), e)
		}
	case []any:
		if len(v) == 0 {
			out[path] = "[]"
		}
		for i, e := range v {
			walk(out, path+"["+strconv.Itoa(i)+"]", e)
		}
	default:
		out[path] = jsonValue(v)
	}
}

// keySegment is a map key as a path continues with it: .key for a name
// made of letters, digits, '-' and '_', else [key], so that the dots and
// slashes of keys such as app.kubernetes.io/name or config.yaml do not read
// as steps of the path.
func keySegment(k string) string {
	plain := k != "" && strings.IndexFunc(k, func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '-' && r != '_'
	}) < 0
	if plain {
		return "." + k
	}
	return "[" + k + "]"
}

// jsonValue is a leaf as JSON; one that does not encode (it cannot come
// from decoded JSON) is shown with %v, still comparable.
func jsonValue(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("%v", v)
	}
	return string(b)
}

// Changed lists, sorted, the paths whose value differs between two
// flattened states of an object, added and removed ones included.
func Changed(before, after map[string]string) []string {
	var out []string
	for p, v := range after {
		if old, ok := before[p]; !ok || old != v {
			out = append(out, p)
		}
	}
	for p := range before {
		if _, ok := after[p]; !ok {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out
}

// Announcement is a change the release record allows: Kind's objects may
// change at Path and under it.
type Announcement struct {
	Kind string // as in StatefulSet, Service, ConfigMap
	Path string // in Flatten's syntax
}

func (a Announcement) String() string { return a.Kind + " " + a.Path }

// Covers says whether the announcement allows a change of path in an
// object of kind: the same path, or one under it (continuing it with '.'
// or '['), so that spec.template.spec.containers[0].image does not cover
// spec.template.spec.containers[0].imagePullPolicy.
func (a Announcement) Covers(kind, path string) bool {
	if kind != a.Kind {
		return false
	}
	rest, ok := strings.CutPrefix(path, a.Path)
	return ok && (rest == "" || rest[0] == '.' || rest[0] == '[')
}

// Unannounced lists the changed paths of an object of kind that no
// announcement covers.
func Unannounced(kind string, changed []string, announced []Announcement) []string {
	var out []string
	for _, p := range changed {
		if !slices.ContainsFunc(announced, func(a Announcement) bool { return a.Covers(kind, p) }) {
			out = append(out, p)
		}
	}
	return out
}

// ParseAnnouncements reads from the release record (the text of
// RELEASES.md) the announcements of changes to operands between release
// previous and the tree: every backquoted "<Kind> <path>" in a
// "### Operands" part of the sections above the one headed "## <previous> "
// (Unreleased, and the releases after previous). Other backquoted terms,
// prose such as `readinessProbe`, are no announcement and are ignored; a
// path that starts like one (metadata., spec., data., binaryData.) but
// does not parse is an error, as is a record without previous's section,
// whose older announcements would otherwise count.
func ParseAnnouncements(releasesMD, previous string) ([]Announcement, error) {
	parts, err := operandsParts(releasesMD, previous)
	if err != nil {
		return nil, err
	}
	var out []Announcement
	for _, term := range backquoted(parts) {
		a, ok, err := parseTerm(term)
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, a)
		}
	}
	return out, nil
}

// operandsParts is the text of the "### Operands" parts above previous's
// section, joined.
func operandsParts(releasesMD, previous string) (string, error) {
	if previous == "" {
		return "", fmt.Errorf("no previous release given")
	}
	var b strings.Builder
	in := false
	for line := range strings.Lines(releasesMD) {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "## "+previous+" ") {
			return b.String(), nil
		}
		if strings.HasPrefix(line, "#") {
			in = line == "### Operands"
			continue
		}
		if in {
			b.WriteString(line + "\n")
		}
	}
	return "", fmt.Errorf("RELEASES.md has no section headed \"## %s \"", previous)
}

// backquoted lists the code spans of a Markdown text, each with its runs
// of spaces and line breaks made one space: a span may wrap over lines.
func backquoted(text string) []string {
	parts := strings.Split(text, "`")
	var out []string
	for i := 1; i < len(parts); i += 2 {
		out = append(out, strings.Join(strings.Fields(parts[i]), " "))
	}
	return out
}

// parseTerm reads one backquoted term as an announcement: ok is false for
// a term of another form.
func parseTerm(term string) (a Announcement, ok bool, err error) {
	kind, path, found := strings.Cut(term, " ")
	if !found || !isKind(kind) || !hasRoot(path) {
		return Announcement{}, false, nil
	}
	if err := checkPath(path); err != nil {
		return Announcement{}, false, fmt.Errorf("RELEASES.md announces `%s`: %w", term, err)
	}
	return Announcement{Kind: kind, Path: path}, true, nil
}

// isKind says whether a word names a kind: a capitalised word of letters
// and digits.
func isKind(w string) bool {
	for i, r := range w {
		if (i == 0 && !unicode.IsUpper(r)) || (!unicode.IsLetter(r) && !unicode.IsDigit(r)) {
			return false
		}
	}
	return w != ""
}

// hasRoot says whether a path starts with one of the parts Flatten
// records, and continues: a bare root would announce every change there.
func hasRoot(path string) bool {
	for _, root := range append([]string{"metadata"}, contentRoots...) {
		if rest, ok := strings.CutPrefix(path, root); ok && rest != "" && (rest[0] == '.' || rest[0] == '[') {
			return true
		}
	}
	return false
}

// checkPath checks a path's syntax: names joined by '.', each step
// possibly followed by [index] or [key] parts, nothing empty.
func checkPath(path string) error {
	if strings.ContainsAny(path, " \t") {
		return fmt.Errorf("a path holds no space")
	}
	for rest := path; rest != ""; {
		name := rest[:strings.IndexAny(rest+".[", ".[")]
		rest = rest[len(name):]
		if name == "" || strings.Contains(name, "]") {
			return fmt.Errorf("empty step or stray ] in %s", path)
		}
		for strings.HasPrefix(rest, "[") {
			end := strings.Index(rest, "]")
			if end < 2 {
				return fmt.Errorf("unclosed or empty [] in %s", path)
			}
			rest = rest[end+1:]
		}
		if rest != "" {
			if rest[0] != '.' {
				return fmt.Errorf("%q follows a ] in %s", rest[0], path)
			}
			rest = rest[1:]
			if rest == "" {
				return fmt.Errorf("%s ends with a dot", path)
			}
		}
	}
	return nil
}
