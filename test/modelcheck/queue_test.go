package modelcheck

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	ctrl "sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// scheduled remembers, for the work queues the model check gives the
// manager (app.Options.NewQueue), which requests a controller has put off
// until later: a RequeueAfter, or a retry after an error or a Requeue,
// which the rate limiter delays. The queue's depth metric counts an item
// only once it is due, so without this a match could count as settled
// while a reconcile was due a second later.
type scheduled struct {
	mu  sync.Mutex
	due map[scheduledKey]time.Time
	// retrying are the retries added whose delay the rate limiter has not
	// given yet: the priority queue takes adds into a buffer and asks the
	// limiter when it empties it, a moment later. Until then they count
	// as due at once.
	retrying map[scheduledKey]bool
	// queues names the queues built; delayedAdds counts the adds put off
	// (RequeueAfter) or rate limited (retries) over the run.
	queues      []string
	delayedAdds int
}

type scheduledKey struct {
	controller string
	req        ctrl.Request
}

func newScheduled() *scheduled {
	return &scheduled{due: map[scheduledKey]time.Time{}, retrying: map[scheduledKey]bool{}}
}

// newQueue builds controller-runtime's priority queue, as a controller
// gets by default, with its rate limiter and adds watched.
func (s *scheduled) newQueue(name string, rl workqueue.TypedRateLimiter[ctrl.Request]) workqueue.TypedRateLimitingInterface[ctrl.Request] {
	s.mu.Lock()
	s.queues = append(s.queues, name)
	s.mu.Unlock()
	limiter := &watchedLimiter{TypedRateLimiter: rl, s: s, name: name}
	return &watchedQueue{
		PriorityQueue: priorityqueue.New(name, func(o *priorityqueue.Opts[ctrl.Request]) { o.RateLimiter = limiter }),
		s:             s, name: name,
	}
}

// schedule records that req is due at at, or earlier if it already was
// (the queue keeps one entry per request, the earliest).
func (s *scheduled) schedule(name string, req ctrl.Request, at time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := scheduledKey{name, req}
	if old, ok := s.due[k]; !ok || at.Before(old) {
		s.due[k] = at
	}
}

// counted counts a delayed add.
func (s *scheduled) counted() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.delayedAdds++
}

// summary names the watched queues and counts the delayed adds.
func (s *scheduled) summary() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return fmt.Sprintf("%d delayed adds (RequeueAfter or retry) to the watched queues %v", s.delayedAdds, s.queues)
}

// retry records that req was added for a retry, its delay not yet known.
func (s *scheduled) retry(name string, req ctrl.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.retrying[scheduledKey{name, req}] = true
}

// delayed records the delay the rate limiter gave req's retry.
func (s *scheduled) delayed(name string, req ctrl.Request, at time.Time) {
	s.mu.Lock()
	delete(s.retrying, scheduledKey{name, req})
	s.mu.Unlock()
	s.schedule(name, req, at)
}

// handedOut: the queue gave req to a worker, so nothing of it waits.
func (s *scheduled) handedOut(name string, req ctrl.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.due, scheduledKey{name, req})
	delete(s.retrying, scheduledKey{name, req})
}

// dueBefore counts the requests due before t, and those due later.
func (s *scheduled) dueBefore(t time.Time) (before, later int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, at := range s.due {
		if at.Before(t) || s.retrying[k] {
			before++
		} else {
			later++
		}
	}
	for k := range s.retrying {
		if _, ok := s.due[k]; !ok {
			before++
		}
	}
	return before, later
}

// watchedLimiter records the delay the queue's rate limiter gives each
// retry: the priority queue asks it once per rate-limited add.
type watchedLimiter struct {
	workqueue.TypedRateLimiter[ctrl.Request]
	s    *scheduled
	name string
}

func (l *watchedLimiter) When(req ctrl.Request) time.Duration {
	d := l.TypedRateLimiter.When(req)
	l.s.delayed(l.name, req, time.Now().Add(d))
	return d
}

// watchedQueue is the priority queue with its delayed adds recorded and
// its hand-outs clearing them.
type watchedQueue struct {
	priorityqueue.PriorityQueue[ctrl.Request]
	s    *scheduled
	name string
}

func (q *watchedQueue) AddWithOpts(o priorityqueue.AddOpts, reqs ...ctrl.Request) {
	for _, r := range reqs {
		if o.After > 0 || o.RateLimited {
			q.s.counted()
		}
		if o.After > 0 {
			q.s.schedule(q.name, r, time.Now().Add(o.After))
		}
		if o.RateLimited {
			q.s.retry(q.name, r)
		}
	}
	q.PriorityQueue.AddWithOpts(o, reqs...)
}

func (q *watchedQueue) AddRateLimited(req ctrl.Request) {
	q.AddWithOpts(priorityqueue.AddOpts{RateLimited: true}, req)
}

func (q *watchedQueue) AddAfter(req ctrl.Request, d time.Duration) {
	q.AddWithOpts(priorityqueue.AddOpts{After: d}, req)
}

func (q *watchedQueue) Get() (ctrl.Request, bool) {
	req, shutdown := q.PriorityQueue.Get()
	q.s.handedOut(q.name, req)
	return req, shutdown
}

func (q *watchedQueue) GetWithPriority() (ctrl.Request, int, bool) {
	req, p, shutdown := q.PriorityQueue.GetWithPriority()
	q.s.handedOut(q.name, req)
	return req, p, shutdown
}

// TestScheduledSeesDelayedAdds: what the watched queue counts as
// scheduled, against a real priority queue: a RequeueAfter and a retry
// are scheduled until a worker takes them; a plain add is due at once,
// which the queue's depth already shows.
func TestScheduledSeesDelayedAdds(t *testing.T) {
	req := ctrl.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "tea"}}
	for _, c := range []struct {
		name string
		add  func(q workqueue.TypedRateLimitingInterface[ctrl.Request])
		// due: scheduled within the second; later: scheduled after it.
		due, later int
	}{
		{"plain add", func(q workqueue.TypedRateLimitingInterface[ctrl.Request]) { q.Add(req) }, 0, 0},
		{"RequeueAfter 200ms", func(q workqueue.TypedRateLimitingInterface[ctrl.Request]) {
			q.(priorityqueue.PriorityQueue[ctrl.Request]).AddWithOpts(priorityqueue.AddOpts{After: 200 * time.Millisecond}, req)
		}, 1, 0},
		{"RequeueAfter 10s", func(q workqueue.TypedRateLimitingInterface[ctrl.Request]) { q.AddAfter(req, 10*time.Second) }, 0, 1},
		{"retry after an error", func(q workqueue.TypedRateLimitingInterface[ctrl.Request]) {
			q.(priorityqueue.PriorityQueue[ctrl.Request]).AddWithOpts(priorityqueue.AddOpts{RateLimited: true}, req)
		}, 1, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := newScheduled()
			q := s.newQueue("model-"+strings.ReplaceAll(c.name, " ", "-"), workqueue.NewTypedItemExponentialFailureRateLimiter[ctrl.Request](5*time.Millisecond, time.Minute))
			defer q.ShutDown()
			c.add(q)
			if due, later := s.dueBefore(time.Now().Add(time.Second)); due != c.due || later != c.later {
				t.Fatalf("after the add: %d scheduled within 1s, %d later; want %d, %d", due, later, c.due, c.later)
			}
			if c.later > 0 {
				return // not handed out within the test
			}
			got, _ := q.Get()
			q.Done(got)
			if due, later := s.dueBefore(time.Now().Add(time.Hour)); got != req || due+later != 0 {
				t.Errorf("after %v was handed out: %d still scheduled, want 0", got, due+later)
			}
		})
	}
}
