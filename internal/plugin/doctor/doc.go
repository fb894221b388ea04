// Package doctor is kubectl myoperator doctor: it reads the installation
// and every Drink from the cluster once (Read) and checks the invariants
// the operator keeps, one function per invariant over what was read, each
// finding with the command that fixes it.
package doctor
