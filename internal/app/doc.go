// Package app assembles the manager: webhooks served with certificates the
// operator manages itself, the storage-version migration and the
// reconcilers. main.go and the tests build the same manager from here.
package app
