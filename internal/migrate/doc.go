// Package migrate moves every stored Drink to the storage version when the
// manager starts after an upgrade, then trims the CRD's
// status.storedVersions, so that old versions can later be dropped safely.
package migrate
