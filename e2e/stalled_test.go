//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"

	operatorv1alpha1 "github.com/example/myoperator/apis/operator/v1alpha1"
	"github.com/example/myoperator/test/framework/testenv"
)

// pulledGuestbook is the Guestbook whose pods pull and run their image for
// real on the suite's kwok cluster: the pod runner runs them (each in a
// network of its own), and kwok's stages leave their readiness and their
// containers' states to it, as they do for the operator's pods
// (kwokstages_test.go, test/framework/kwokconfig).
const pulledGuestbook = "e2e-image"

// missingGuestbookImage is an image no registry or store here has.
const missingGuestbookImage = "ghcr.io/example/myoperator-guestbook:e2e-no-such-image"

// guestbookStalledRollout: a Guestbook of size 2 whose pods really run the
// Guestbook server; the OperatorConfig's guestbook.image changed to one
// that does not exist stops the StatefulSet's rollout at its first pod,
// which cannot pull it. Within 30 s the Guestbook says so (Stalled,
// PodCannotRun, naming the image), while the Service keeps a ready pod of
// the previous image; the image restored, the Guestbook turns Ready again.
func guestbookStalledRollout() features.Feature {
	var before string // spec.guestbook.image before the feature ("" for none)
	restore := func(t *testing.T, cfg *envconf.Config) {
		value := "null"
		if before != "" {
			value = fmt.Sprintf("%q", before)
		}
		patchConfig(t, cfg, `{"spec":{"guestbook":{"image":`+value+`}}}`)
	}
	return features.New("guestbook stalled rollout").WithLabel("area", "guestbook").
		Setup(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			oc := &operatorv1alpha1.OperatorConfig{}
			if err := kc.Get(ctx, client.ObjectKey{Name: operatorv1alpha1.SingletonName}, oc); err != nil {
				t.Fatal(err)
			}
			before = oc.Spec.Guestbook.Image
			if out, err := apply(cfg, "apiVersion: webapp.my.domain/v1\nkind: Guestbook\nmetadata: {name: "+pulledGuestbook+"}\n"+
				"spec: {size: 2, configMapName: e2e-image-conf}\n"); err != nil {
				t.Fatalf("%v: %s", err, out)
			}
			return ctx
		}).
		Assess("Ready, its two pods running the Guestbook server", conditionTrueWithin("guestbook", "", pulledGuestbook, "Ready", 90*time.Second)).
		Assess("an image that does not exist is said within 30 s, naming it, while a pod serves", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			start := time.Now()
			patchConfig(t, cfg, fmt.Sprintf(`{"spec":{"guestbook":{"image":%q}}}`, missingGuestbookImage))
			testenv.Eventually(t, 30*time.Second, func() string {
				stalled, err := guestbookCondition(cfg, "Stalled")
				if err != nil {
					return err.Error()
				}
				if stalled.Status != "True" || stalled.Reason != "PodCannotRun" || !strings.Contains(stalled.Message, "image "+missingGuestbookImage) {
					return fmt.Sprintf("Stalled %+v, want True, PodCannotRun, naming image %s", stalled, missingGuestbookImage)
				}
				return ""
			})
			stalled, _ := guestbookCondition(cfg, "Stalled")
			t.Logf("said after %s: %s", time.Since(start).Round(time.Millisecond), stalled.Message)
			if !strings.Contains(stalled.Message, "ErrImagePull") && !strings.Contains(stalled.Message, "ImagePullBackOff") {
				t.Errorf("the message names neither ErrImagePull nor ImagePullBackOff: %s", stalled.Message)
			}
			if n := readyEndpoints(t, cfg, pulledGuestbook); n != 1 {
				t.Errorf("Service %s has %d ready endpoints while the rollout is stalled, want 1 (the active pod of the previous image)", pulledGuestbook, n)
			}
			return ctx
		}).
		Assess("the image restored, it is Ready again", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			start := time.Now()
			restore(t, cfg)
			testenv.Eventually(t, 90*time.Second, func() string {
				ready, err := guestbookCondition(cfg, "Ready")
				if err != nil {
					return err.Error()
				}
				stalled, _ := guestbookCondition(cfg, "Stalled")
				if ready.Status != "True" || stalled.Status != "" {
					return fmt.Sprintf("Ready %+v, Stalled %+v; want Ready and no Stalled", ready, stalled)
				}
				return ""
			})
			t.Logf("Ready again %s after the image was restored", time.Since(start).Round(time.Millisecond))
			return ctx
		}).
		Teardown(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			restore(t, cfg)
			if out, err := kubectl(cfg, "delete", "guestbook", pulledGuestbook, "--ignore-not-found"); err != nil {
				t.Errorf("%v: %s", err, out)
			}
			return ctx
		}).Feature()
}

// condition is one status condition as kubectl prints it.
type condition struct {
	Type, Status, Reason, Message string
}

// guestbookCondition reads one condition of the Guestbook pulledGuestbook
// (zero when it has none of that type).
func guestbookCondition(cfg *envconf.Config, conditionType string) (condition, error) {
	out, err := kubectl(cfg, "get", "guestbook", pulledGuestbook, "-o", fmt.Sprintf(`jsonpath={.status.conditions[?(@.type=="%s")]}`, conditionType))
	if err != nil {
		return condition{}, fmt.Errorf("%w: %s", err, out)
	}
	var c condition
	if strings.TrimSpace(out) == "" {
		return c, nil
	}
	return c, json.Unmarshal([]byte(out), &c)
}

// readyEndpoints counts the ready endpoints of a Service of the operand
// namespace.
func readyEndpoints(t *testing.T, cfg *envconf.Config, service string) int {
	t.Helper()
	out, err := kubectl(cfg, "get", "endpointslices", "-n", "guestbook", "-l", "kubernetes.io/service-name="+service,
		"-o", `jsonpath={range .items[*].endpoints[?(@.conditions.ready==true)]}{.targetRef.name}{" "}{end}`)
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	return len(strings.Fields(out))
}

// pullsForReal says why the Guestbook's pods would not pull their image on
// this cluster: on nodes kwok fakes, which the suite's pod runner does not
// play, a pod of any image turns Ready.
func pullsForReal() string {
	if !mode.created() && mode.fakeNodes > 0 {
		return "E2E_FAKE_NODES: the Guestbook's pods may land on kwok nodes, where no image is pulled"
	}
	return ""
}
