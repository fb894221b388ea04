package certs

import (
	"bytes"
	"context"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// CAPublisher copies the CA certificate of the serving Secret, and nothing
// else of it, into a ConfigMap of the same namespace. The metrics endpoint
// serves the webhook certificate, so Prometheus must trust that CA; read
// from the Secret, which also holds the serving key (and, with the
// operator's own rotator, the CA's key), the right to verify the endpoint
// would be the right to impersonate it. The ConfigMap holds only what is
// public.
type CAPublisher struct {
	// Reader is a cached reader scoped to the Secret's namespace; Writer
	// applies the ConfigMap.
	Reader client.Reader
	Writer client.Client
	Secret types.NamespacedName
	// ConfigMap is the name of the ConfigMap in the Secret's namespace;
	// Labels are set on it (the manager's cache selects its ConfigMaps by
	// label).
	ConfigMap  string
	Labels     map[string]string
	FieldOwner string
	Every      time.Duration
	Log        logr.Logger

	published []byte
}

// NeedLeaderElection returns true: one replica writes the ConfigMap.
func (p *CAPublisher) NeedLeaderElection() bool { return true }

// Start publishes until the context ends.
func (p *CAPublisher) Start(ctx context.Context) error {
	every := p.Every
	if every == 0 {
		every = 10 * time.Second
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		if err := p.PublishOnce(ctx); err != nil {
			p.Log.Error(err, "publishing the webhook CA")
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// PublishOnce applies the ConfigMap when the Secret's CA differs from the
// one it last published (at start, it applies once whatever the
// ConfigMap holds, so that an edit of it is undone).
func (p *CAPublisher) PublishOnce(ctx context.Context) error {
	secret := &corev1.Secret{}
	if err := p.Reader.Get(ctx, p.Secret, secret); err != nil {
		if apierrors.IsNotFound(err) {
			return nil // not issued yet
		}
		return err
	}
	ca := secret.Data[caCertKey]
	if len(ca) == 0 || bytes.Equal(ca, p.published) {
		return nil
	}
	cm := corev1ac.ConfigMap(p.ConfigMap, p.Secret.Namespace).WithLabels(p.Labels).WithData(map[string]string{caCertKey: string(ca)})
	if err := p.Writer.Apply(ctx, cm, client.FieldOwner(p.FieldOwner), client.ForceOwnership); err != nil {
		return fmt.Errorf("writing ConfigMap %s/%s: %w", p.Secret.Namespace, p.ConfigMap, err)
	}
	p.published = bytes.Clone(ca)
	p.Log.Info("published the webhook CA", "configMap", p.Secret.Namespace+"/"+p.ConfigMap)
	return nil
}
