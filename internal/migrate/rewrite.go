package migrate

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	drinksv1 "github.com/example/myoperator/apis/drinks/v1"
)

// fieldOwner names the migration in managedFields and audit logs.
const fieldOwner = client.FieldOwner("myoperator-storage-migration")

// emptyPatch changes nothing; sent to the status subresource it makes the
// API server read the object and write it back in the storage version.
var emptyPatch = client.RawPatch(types.MergePatchType, []byte("{}"))

// rewrite makes the API server store d in the storage version. A Drink
// from before versions were recorded (legacy names the version of that
// release, found among the stored versions; "" when it is not) first gets
// its authored version, whose write stores it anew too. A Drink deleted
// meanwhile needs nothing.
func (m *Migrator) rewrite(ctx context.Context, d *drinksv1.Drink, legacy string) error {
	var recordErr error
	if legacy != "" && !hasAuthoredVersion(d) {
		if recordErr = m.recordLegacyVersion(ctx, d, legacy); recordErr == nil || apierrors.IsNotFound(recordErr) {
			return nil
		}
	}
	// Store it anew even when the record failed: then only the record is
	// left for the next attempt.
	if err := m.store(ctx, d); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("storing it as the storage version: %w", err)
	}
	if recordErr != nil {
		return fmt.Errorf("recording authored version %s: %w", legacy, recordErr)
	}
	return nil
}

// store rewrites d unchanged through the status subresource. It is not a
// user's edit, so it goes where the admission webhooks, registered for the
// main resource, do not look (the API server's schema validation ratchets
// unchanged fields, so rules newer than the object do not block it). For a
// Drink already stored in the storage version the API server writes
// nothing.
func (m *Migrator) store(ctx context.Context, d *drinksv1.Drink) error {
	return m.Client.Status().Patch(ctx, d.DeepCopy(), emptyPatch, fieldOwner)
}

// recordLegacyVersion records legacy as d's authored version with a
// metadata patch of the main resource (a status write drops metadata
// changes). The patch carries d's resourceVersion: a client that wrote the
// spec meanwhile recorded its own version, which must not be overwritten.
func (m *Migrator) recordLegacyVersion(ctx context.Context, d *drinksv1.Drink, legacy string) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if hasAuthoredVersion(d) {
			return m.store(ctx, d)
		}
		want := d.DeepCopy()
		metav1.SetMetaDataAnnotation(&want.ObjectMeta, drinksv1.AuthoredVersionAnnotation, legacy)
		err := m.Client.Patch(ctx, want, client.MergeFromWithOptions(d, client.MergeFromWithOptimisticLock{}), fieldOwner)
		if apierrors.IsConflict(err) {
			fresh := &drinksv1.Drink{}
			if gerr := m.Client.Get(ctx, client.ObjectKeyFromObject(d), fresh); gerr != nil {
				return gerr
			}
			*d = *fresh
		}
		return err
	})
}

func hasAuthoredVersion(d *drinksv1.Drink) bool {
	_, ok := d.Annotations[drinksv1.AuthoredVersionAnnotation]
	return ok
}
