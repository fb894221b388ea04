package model

import "time"

// Shrink returns the shortest sequence it finds, before deadline, that still
// fails: delta debugging (ddmin) that drops chunks of halves, then quarters,
// down to single actions. fails replays a sequence from scratch and reports
// whether it fails; actions a shorter sequence makes inapplicable are for
// the replayer to skip (Model.Applicable).
func Shrink(seq []Action, fails func([]Action) bool, deadline time.Time) []Action {
	n := 2
	for len(seq) > 1 && time.Now().Before(deadline) {
		chunk := (len(seq) + n - 1) / n
		reduced := false
		for start := 0; start < len(seq) && time.Now().Before(deadline); start += chunk {
			end := min(start+chunk, len(seq))
			candidate := append(append([]Action{}, seq[:start]...), seq[end:]...)
			if len(candidate) > 0 && fails(candidate) {
				seq, reduced = candidate, true
				n = max(n-1, 2)
				break
			}
		}
		if reduced {
			continue
		}
		if chunk == 1 {
			break
		}
		n = min(2*n, len(seq))
	}
	return seq
}
