package crdvalidation_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/example/myoperator/internal/crdvalidation"
	"github.com/example/myoperator/test/framework/testutil"
)

// TestEmbeddedCRDIsGenerated: the embedded copy is the generated CRD, so the
// webhook checks the rules the API server has (make manifests writes it,
// make verify also catches a stale copy).
func TestEmbeddedCRDIsGenerated(t *testing.T) {
	root, err := testutil.FindRepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	generated, err := os.ReadFile(filepath.Join(root, "config", "crd", "bases", "example.com_drinks.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(generated, crdvalidation.DrinksCRD()) {
		t.Fatal("internal/crdvalidation/example.com_drinks.yaml differs from config/crd/bases: run make manifests")
	}
}

func drink(spec map[string]any) map[string]any {
	return map[string]any{
		"apiVersion": "example.com/v1", "kind": "Drink",
		"metadata": map[string]any{"name": "d", "namespace": "ns"},
		"spec":     spec,
	}
}

// TestBlank: the not-blank rule of the CRD rejects strings that a reader
// sees as blank (only whitespace, control or format characters) and keeps
// every string with something visible in it.
func TestBlank(t *testing.T) {
	v, err := crdvalidation.DrinkHub()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		value string
		blank bool
	}{
		{"spaces", "   ", true},
		{"tab and newline", "\t\n", true},
		{"no-break space", "\u00a0", true},
		{"ideographic space", "\u3000", true},
		{"line separator", "\u2028", true},
		{"zero-width space", "\u200b", true},
		{"zero-width joiner and byte order mark", "\u200d\ufeff", true},
		{"soft hyphen", "\u00ad", true},
		{"bidi marks", "\u200e\u200f\u202a", true},
		{"escape character", "\x1b", true},
		{"a letter", "a", false},
		{"a letter among invisible ones", "\u200bTea\u200b", false},
		{"accented letter", "é", false},
		{"emoji", "☕", false},
		{"CJK", "茶", false},
		{"digit after spaces", "  1", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for _, fld := range []string{"displayName", "beverage"} {
				spec := map[string]any{"displayName": "x", "beverage": "tea"}
				spec[fld] = tc.value
				errs := v.Validate(context.Background(), drink(spec), nil)
				got := strings.Contains(fmt.Sprint(errs), fld+" must not be blank")
				if got != tc.blank {
					t.Errorf("%s %q: blank %v, want %v (errors: %v)", fld, tc.value, got, tc.blank, errs)
				}
				if tc.blank && (len(errs) != 1 || errs[0].Field != "spec."+fld) {
					t.Errorf("%s %q: errors %v, want one on spec.%s", fld, tc.value, errs, fld)
				}
			}
		})
	}
}
