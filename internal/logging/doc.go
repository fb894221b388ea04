// Package logging builds the zap logger, behind logr through zapr, that the
// manager and the bootstrap binary share, with a level that can change while
// the process runs.
package logging
