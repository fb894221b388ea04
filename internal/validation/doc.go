// Package validation holds the pure validation functions of the project's
// APIs: the rules that the OpenAPI schema and CEL cannot say (cross-field,
// cross-object, update and naming rules). The validating webhooks delegate
// to them, the reconcilers reuse them, and unit tests call them directly.
package validation
