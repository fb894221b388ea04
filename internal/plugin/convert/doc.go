// Package convert is kubectl myoperator convert: it converts Drink manifests
// between the API versions offline, with the operator's own conversion
// functions (apis/drinks/conversion), through the v1 hub as the API server
// does. What a version cannot hold travels in the example.com/conversion-data
// annotation, so that converting back restores it: nothing is lost.
package convert
