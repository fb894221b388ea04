package migrate

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	drinksv1 "github.com/example/myoperator/apis/drinks/v1"
	drinksversions "github.com/example/myoperator/apis/drinks/versions"
)

// seedFields is what the seed entry (see cleanManagedFields) owns: the
// name, which every object has and no apply can take away.
const seedFields = `{"f:metadata":{"f:name":{}}}`

// CleanManagedFields returns the managedFields of an object without the
// entries whose apiVersion is not in served, and whether any was removed.
//
// The API server converts an object to the version of every managedFields
// entry on each server-side apply; an entry naming a version the CRD no
// longer lists makes that conversion fail, and with it every apply
// (kubernetes/kubernetes#111937). An entry of a version that is listed but
// not served still converts, but nothing can write it again, and it is the
// one that fails once the version is removed.
//
// When every entry goes, one seed entry takes their place, owning only
// metadata.name under the manager and operation of the first removed one
// and the storage version: an update carrying no managedFields keeps the
// stored ones, and an object without any would get, on its next apply, an
// entry that owns every field for a made-up manager, so that the apply
// could never remove a field again.
func CleanManagedFields(entries []metav1.ManagedFieldsEntry, served []string, storage string, now metav1.Time) ([]metav1.ManagedFieldsEntry, bool) {
	kept := make([]metav1.ManagedFieldsEntry, 0, len(entries))
	for _, e := range entries {
		if slices.Contains(served, e.APIVersion) {
			kept = append(kept, e)
		}
	}
	if len(kept) == len(entries) {
		return entries, false
	}
	if len(kept) == 0 {
		kept = append(kept, metav1.ManagedFieldsEntry{
			Manager: entries[0].Manager, Operation: entries[0].Operation, APIVersion: storage,
			Time: &now, FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(seedFields),
		})
	}
	return kept, true
}

// servedVersions returns the group/versions the CRD serves, as
// managedFields name them.
func servedVersions(crd *apiextensionsv1.CustomResourceDefinition) []string {
	var served []string
	for _, v := range crd.Spec.Versions {
		if v.Served {
			served = append(served, crd.Spec.Group+"/"+v.Name)
		}
	}
	return served
}

// allServed tells whether the CRD serves every version of known, the table
// of every version any release served. A managedFields entry can only name
// one of them, so when the CRD serves them all there is nothing to clean and
// the Drinks are not even listed.
func allServed(crd *apiextensionsv1.CustomResourceDefinition, known drinksversions.Table) bool {
	served := servedVersions(crd)
	for _, v := range known.Names() {
		if !slices.Contains(served, crd.Spec.Group+"/"+v) {
			return false
		}
	}
	return true
}

// cleanAll removes, from every Drink, the managedFields entries of versions
// the CRD does not serve (CleanManagedFields), page by page, so that
// server-side apply keeps working once those versions are removed from
// the CRD. A Drink with nothing to clean costs no write, so running it
// again changes nothing. Only the metadata is listed: the entries are all
// it looks at.
func (m *Migrator) cleanAll(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition, attempt int) error {
	if allServed(crd, m.table()) {
		m.Log.V(1).Info("managedFields cleanup not needed: every version is served")
		return nil
	}
	served := servedVersions(crd)
	storage := crd.Spec.Group + "/" + storageVersion(crd)
	m.Log.Info("managedFields cleanup started", "served", served, "attempt", attempt)
	failed, cleaned := &Error{}, 0
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(drinksv1.GroupVersion.WithKind("DrinkList"))
	for listing, page := 1, 0; ; {
		err := m.Client.List(ctx, list, client.Limit(m.pageSize()), client.Continue(list.Continue))
		if (apierrors.IsResourceExpired(err) || apierrors.IsGone(err)) && listing < maxListings {
			// Cleaning is idempotent: a new listing from the start only
			// lists again what is clean already.
			listing, page, list.Continue = listing+1, 0, ""
			m.Log.Info("managedFields cleanup listing expired; listing again from the start", "listing", listing)
			continue
		}
		if err != nil {
			return fmt.Errorf("listing Drinks (page %d): %w", page+1, err)
		}
		page++
		for i := range list.Items {
			d := &list.Items[i]
			d.SetGroupVersionKind(drinksv1.GroupVersion.WithKind("Drink"))
			done, err := m.cleanOne(ctx, d, served, storage)
			if err != nil {
				failed.Failures = append(failed.Failures, Failure{Namespace: d.Namespace, Name: d.Name, Err: err})
			}
			if done {
				cleaned++
			}
		}
		failed.Total += len(list.Items)
		m.Log.Info("managedFields cleanup progress", "seen", failed.Total, "cleaned", cleaned,
			"failed", len(failed.Failures), "page", page, "listing", listing, "attempt", attempt)
		if err := ctx.Err(); err != nil {
			return err
		}
		if list.Continue == "" {
			break
		}
	}
	if len(failed.Failures) > 0 {
		return fmt.Errorf("cleaning managedFields of versions not served: %w", failed)
	}
	m.Log.Info("managedFields cleanup done", "seen", failed.Total, "cleaned", cleaned, "served", served)
	return nil
}

// cleanOne writes d's managedFields without the entries of versions not
// served, and reports whether it wrote. The JSON patch carries d's
// resourceVersion, so that entries another writer added meanwhile are not
// lost: on a conflict it reads d again and decides anew. It only touches
// metadata.managedFields, so the admission webhooks see the spec unchanged
// and keep the authored version.
func (m *Migrator) cleanOne(ctx context.Context, d *metav1.PartialObjectMetadata, served []string, storage string) (bool, error) {
	wrote := false
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		entries, changed := CleanManagedFields(d.ManagedFields, served, storage, metav1.Now())
		if !changed {
			return nil
		}
		patch, err := json.Marshal([]map[string]any{
			{"op": "replace", "path": "/metadata/managedFields", "value": entries},
			{"op": "replace", "path": "/metadata/resourceVersion", "value": d.ResourceVersion},
		})
		if err != nil {
			return err
		}
		err = m.Client.Patch(ctx, d, client.RawPatch(types.JSONPatchType, patch), fieldOwner)
		if apierrors.IsConflict(err) {
			if gerr := m.Client.Get(ctx, client.ObjectKeyFromObject(d), d); gerr != nil {
				return gerr
			}
		}
		wrote = err == nil
		return err
	})
	if apierrors.IsNotFound(err) {
		return false, nil // deleted meanwhile: nothing left to clean
	}
	return wrote, err
}
