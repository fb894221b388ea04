// Package drinkload writes and reads Drinks through every served version
// while something disrupts the operator (an upgrade, a rolling restart, a
// node drain, a certificate renewal) and counts every request that failed.
// It never retries: a webhook endpoint that is gone for a moment shows as a
// failure. The e2e suite runs it (e2e/disruption_test.go, and the upgrade
// and certificate renewal features), on its own cluster and, through make
// test-demo, on the demo's.
package drinkload
