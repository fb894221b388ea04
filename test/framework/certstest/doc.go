// Package certstest issues test certificates the way cert-manager's CA
// Issuer does, and writes them into a Secret in the format its Certificate
// produces, for tests of the manager's cert-manager mode on a real API
// server.
package certstest
