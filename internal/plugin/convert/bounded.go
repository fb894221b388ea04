package convert

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"sigs.k8s.io/yaml"
)

// MaxDocumentBytes is the largest document convert reads whole: 3 MiB, the
// most kube-apiserver takes in one request body (larger ones it refuses as
// too large), so no Drink that big can exist. Reading a document whole
// costs about 15 times its size (YAML to JSON to the typed object and
// back); a 64 MiB manifest read whole took 902 MiB.
const MaxDocumentBytes = 3 << 20

// errTooLarge: a document (or a List's item) passed MaxDocumentBytes.
var errTooLarge = fmt.Errorf("larger than %d MiB, the most the API server takes in one request", MaxDocumentBytes>>20)

// docReader splits a YAML stream into documents at "---" lines, as
// apimachinery's YAML reader does, but stops a document at max bytes
// rather than holding all of it.
type docReader struct {
	r   *bufio.Reader
	max int
}

// next returns the next document. Past max bytes it returns what it read
// of it (its head) with errTooLarge, the rest unread; io.EOF at the end.
func (d *docReader) next() ([]byte, error) {
	var doc []byte
	for {
		line, err := d.readLine()
		if len(line) > 0 && isSeparator(line) {
			if len(bytes.TrimSpace(doc)) > 0 {
				return doc, nil
			}
			doc = doc[:0]
			continue
		}
		doc = append(doc, line...)
		if len(doc) > d.max {
			return doc, errTooLarge
		}
		if errors.Is(err, io.EOF) {
			if len(bytes.TrimSpace(doc)) > 0 {
				return doc, nil
			}
			return nil, io.EOF
		}
		if err != nil {
			return nil, err
		}
	}
}

// readLine reads one line, its newline included, but at most max+1 bytes
// of it: a longer line is returned in pieces, so that a document without
// newlines is bounded too.
func (d *docReader) readLine() ([]byte, error) {
	var line []byte
	for {
		part, err := d.r.ReadSlice('\n')
		line = append(line, part...)
		if !errors.Is(err, bufio.ErrBufferFull) || len(line) > d.max {
			return line, err
		}
	}
}

// isSeparator: "---" starting a line, with nothing but spaces or a comment
// after it.
func isSeparator(line []byte) bool {
	rest, ok := bytes.CutPrefix(line, []byte("---"))
	if !ok {
		return false
	}
	rest = bytes.TrimSpace(rest)
	return len(rest) == 0 || rest[0] == '#'
}

// capReader bounds what a json.Decoder holds of one value: it refuses to
// read on once the bytes read past mark (where the value being decoded
// started, the decoder's InputOffset) pass max.
type capReader struct {
	r         io.Reader
	read      int64
	mark, max int64
}

func (c *capReader) Read(p []byte) (int, error) {
	if c.read-c.mark > c.max {
		return 0, errTooLarge
	}
	n, err := c.r.Read(p)
	c.read += int64(n)
	return n, err
}

// jsonList converts a JSON List (kubectl get -o json) too large to read
// whole, item by item, each at most max bytes, and writes it as a YAML
// List: the List's fields in the order read, its items converted as they
// arrive. Anything but a v1 List is refused: no single object that large
// can exist.
// It returns what the decoder read past the List, for the documents after
// it.
func (c converter) jsonList(w io.Writer, r io.Reader, to string, maxBytes int64) (io.Reader, error) {
	cr := &capReader{r: r, max: maxBytes}
	dec := json.NewDecoder(cr)
	if t, err := dec.Token(); err != nil {
		return nil, err
	} else if t != json.Delim('{') {
		return nil, fmt.Errorf("not a JSON object: %v", t)
	}
	kind := ""
	for dec.More() {
		cr.mark = dec.InputOffset()
		t, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key, _ := t.(string)
		if key == "items" {
			if err := c.jsonItems(w, dec, cr, to); err != nil {
				return nil, err
			}
			continue
		}
		cr.mark = dec.InputOffset()
		var v any
		if err := dec.Decode(&v); err != nil {
			return nil, fmt.Errorf("%s: %w", key, err)
		}
		switch {
		case key == "kind" && v != "List", key == "apiVersion" && v != "v1":
			return nil, fmt.Errorf("%s %q: a document %w converts only as a v1 List (kubectl get -o json), item by item", key, v, errTooLarge)
		case key == "kind":
			kind = "List"
		}
		out, err := yaml.Marshal(map[string]any{key: v})
		if err != nil {
			return nil, err
		}
		if _, err := w.Write(out); err != nil {
			return nil, err
		}
	}
	if kind != "List" {
		return nil, fmt.Errorf("no kind: a document %w converts only as a v1 List (kubectl get -o json), item by item", errTooLarge)
	}
	if _, err := dec.Token(); err != nil { // the closing brace
		return nil, err
	}
	return dec.Buffered(), nil
}

// jsonItems converts a List's items one at a time, each written as an
// entry of the YAML list "items:".
func (c converter) jsonItems(w io.Writer, dec *json.Decoder, cr *capReader, to string) error {
	if t, err := dec.Token(); err != nil {
		return fmt.Errorf("items: %w", err)
	} else if t != json.Delim('[') {
		return fmt.Errorf("items: not a JSON array: %v", t)
	}
	if _, err := io.WriteString(w, "items:\n"); err != nil {
		return err
	}
	for i := 0; dec.More(); i++ {
		cr.mark = dec.InputOffset()
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return fmt.Errorf("items[%d]: %w", i, err)
		}
		out, err := c.convert(raw, to)
		if err != nil {
			return fmt.Errorf("items[%d]: %w", i, err)
		}
		y, err := yaml.Marshal(out)
		if err != nil {
			return err
		}
		// An entry of a block sequence: "- " before its first line, two
		// spaces before the others.
		entry := "- " + strings.ReplaceAll(strings.TrimSuffix(string(y), "\n"), "\n", "\n  ") + "\n"
		if _, err := io.WriteString(w, entry); err != nil {
			return err
		}
	}
	_, err := dec.Token() // the closing bracket
	return err
}
