// Command guestbook-server is what the Guestbook's pods run by default
// (OperatorConfig guestbook.image, ghcr.io/example/myoperator-guestbook):
// a small HTTP server on :8080 that shows the pod's name and the entries of
// the Guestbook's ConfigMap, mounted read-only at /etc/guestbook, and
// answers the probes of the StatefulSet the operator writes. It exists so
// that readiness means something: the operator labels one Ready pod active
// and promotes a Ready standby when the active one stops being Ready, and
// with a real server behind the readiness probe that failover follows a
// real probe failing, which POST /readyz/fail provokes on demand when the
// server runs with --failover-drill (or GUESTBOOK_FAILOVER_DRILL=enabled;
// off by default, as anyone who reaches the pod could call it). Standard
// library only; it writes nothing to disk, so it runs as uid 65532 on a
// read-only root filesystem (guestbook.Dockerfile, FROM scratch).
package main
