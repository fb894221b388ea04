// Package versions is the one table of Drink API versions: what each version
// is (served, deprecated, storage hub), the spec fields it holds and their
// names in the hub, and the ConfigMap layout of Drinks authored in it.
// Conversion, the webhooks, validation, migration and the reconciler read it
// instead of keeping lists of their own; the Go types of each version and
// the generated CRD stay in their packages, and tests hold them to it.
package versions
