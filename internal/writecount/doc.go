// Package writecount counts the API writes made on behalf of one unit of
// work, such as one reconcile. The count is taken at the HTTP transport, so
// every write counts (creates, updates, patches, applies, deletes, status
// and other subresources, retries after a conflict) whichever client or
// helper sent it, and nothing that merely reads. A write counts when its
// request carries the context returned by Start: work done for others on
// their own contexts (the event recorder's broadcaster, leader election,
// the certificate rotator) is not counted.
package writecount
