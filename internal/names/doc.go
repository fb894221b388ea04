// Package names holds the names the operator's objects, labels and
// annotations go by, so that the manager, the initContainer and the kubectl
// plugin agree on them without linking each other. It imports nothing of the
// project: any shipped package may import it.
package names
