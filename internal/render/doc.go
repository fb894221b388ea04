// Package render turns a Drink into the data of its ConfigMap, in the layout
// of the API version its spec was authored in: the one place where what the
// operator writes differs by version. It is pure (no client, no cache), so
// the reconciler and the kubectl plugin's checks render alike without the
// plugin linking the manager.
package render
