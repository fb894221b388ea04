package migrate

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestCleanManagedFields: entries of versions not served go, the others
// stay as they are and in their order; when none would stay, one seed entry
// owning metadata.name keeps the first manager's apply from being shared
// with a made-up manager; nothing to remove reports no change.
func TestCleanManagedFields(t *testing.T) {
	now := metav1.NewTime(time.Unix(1700000000, 0))
	served := []string{"example.com/v1", "example.com/v1beta1"}
	const storage = "example.com/v1"
	entry := func(manager string, op metav1.ManagedFieldsOperationType, version, sub string) metav1.ManagedFieldsEntry {
		return metav1.ManagedFieldsEntry{Manager: manager, Operation: op, APIVersion: version, Subresource: sub,
			FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(`{"f:spec":{}}`)}
	}
	applyAlpha := entry("kubectl", metav1.ManagedFieldsOperationApply, "example.com/v1alpha1", "")
	statusV1 := entry("myoperator", metav1.ManagedFieldsOperationUpdate, "example.com/v1", "status")
	updateBeta := entry("editor", metav1.ManagedFieldsOperationUpdate, "example.com/v1beta1", "")
	updateRemoved := entry("old-tool", metav1.ManagedFieldsOperationUpdate, "example.com/v0", "")
	seed := metav1.ManagedFieldsEntry{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationApply, APIVersion: storage,
		Time: &now, FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(seedFields)}
	for _, tc := range []struct {
		name        string
		entries     []metav1.ManagedFieldsEntry
		want        []metav1.ManagedFieldsEntry
		wantChanged bool
	}{
		{name: "no entries", entries: nil, want: nil},
		{name: "all served", entries: []metav1.ManagedFieldsEntry{statusV1, updateBeta}, want: []metav1.ManagedFieldsEntry{statusV1, updateBeta}},
		{name: "not served among served", entries: []metav1.ManagedFieldsEntry{applyAlpha, statusV1, updateBeta},
			want: []metav1.ManagedFieldsEntry{statusV1, updateBeta}, wantChanged: true},
		{name: "a version no longer listed", entries: []metav1.ManagedFieldsEntry{updateBeta, updateRemoved},
			want: []metav1.ManagedFieldsEntry{updateBeta}, wantChanged: true},
		{name: "none served: one seed", entries: []metav1.ManagedFieldsEntry{applyAlpha, updateRemoved},
			want: []metav1.ManagedFieldsEntry{seed}, wantChanged: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, changed := CleanManagedFields(tc.entries, served, storage, now)
			if changed != tc.wantChanged {
				t.Errorf("changed = %v, want %v", changed, tc.wantChanged)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("entries (-want +got):\n%s", diff)
			}
		})
	}
}
