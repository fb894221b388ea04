package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/prometheus/procfs"
)

// listPage is kubectl's page size (kubectl get --chunk-size, default 500).
const listPage = 500

// Lists is the median time of a LIST of every Drink of a namespace through
// the storage version and through v1alpha1, which the API server converts
// by calling the operator's conversion webhook, both paginated as kubectl
// does; and the manager's memory around the v1alpha1 LISTs, since it
// converts their pages.
type Lists struct {
	V1, V1alpha1 float64 // seconds
	// Pages is the number of pages of one LIST.
	Pages int
	// RSSBefore is the manager's resident memory before the LISTs, and
	// PeakRSSV1alpha1 its peak while it converted the v1alpha1 pages (the
	// kernel's high-water mark, reset before them); 0 when not measured.
	RSSBefore, PeakRSSV1alpha1 float64 // bytes
	// Unpaginated is the time of one LIST of every Drink through v1alpha1
	// without a limit, which the API server converts in one
	// ConversionReview, and PeakRSSUnpaginated the manager's peak while it
	// converted it; 0 when not measured.
	Unpaginated        float64 // seconds
	PeakRSSUnpaginated float64 // bytes
}

// ListDrinks LISTs the Drinks of ns reps times through each version,
// alternating so that both see the same machine, and checks that each LIST
// returned all n. pid is the manager's process, whose peak memory during
// the v1alpha1 LISTs is recorded (0 records none).
func ListDrinks(ctx context.Context, cp *ControlPlane, ns string, n, reps, pid int) (Lists, error) {
	var v1, alpha []float64
	res := Lists{}
	if pid > 0 {
		rss, err := residentBytes(pid)
		if err != nil {
			return Lists{}, err
		}
		res.RSSBefore = rss
	}
	for range reps {
		for _, version := range []string{"v1", "v1alpha1"} {
			if version == "v1alpha1" && pid > 0 {
				// Writing 5 to clear_refs resets the peak resident set
				// (VmHWM) to the current one.
				if err := os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0); err != nil {
					return Lists{}, fmt.Errorf("resetting the manager's peak memory: %w", err)
				}
			}
			took, pages, err := listAll(ctx, cp, ns, version, n, listPage)
			if err != nil {
				return Lists{}, err
			}
			res.Pages = pages
			if version == "v1" {
				v1 = append(v1, took)
				continue
			}
			alpha = append(alpha, took)
			if pid > 0 {
				peak, err := peakResidentBytes(pid)
				if err != nil {
					return Lists{}, err
				}
				res.PeakRSSV1alpha1 = max(res.PeakRSSV1alpha1, peak)
			}
		}
	}
	res.V1, res.V1alpha1 = SpreadOf(v1).Median, SpreadOf(alpha).Median
	if pid > 0 {
		if err := os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0); err != nil {
			return Lists{}, fmt.Errorf("resetting the manager's peak memory: %w", err)
		}
		took, _, err := listAll(ctx, cp, ns, "v1alpha1", n, 0)
		if err != nil {
			return Lists{}, fmt.Errorf("unpaginated: %w", err)
		}
		res.Unpaginated = took
		if res.PeakRSSUnpaginated, err = peakResidentBytes(pid); err != nil {
			return Lists{}, err
		}
	}
	return res, nil
}

// listAll reads every Drink of ns through version in pages of page Drinks
// (0: all in one), following the continue token, and returns the time it
// took and the number of pages.
func listAll(ctx context.Context, cp *ControlPlane, ns, version string, n, page int) (float64, int, error) {
	path := "/apis/example.com/" + version + "/namespaces/" + ns + "/drinks"
	start := time.Now()
	items, pages, cont := 0, 0, ""
	for {
		req := cp.Clientset.RESTClient().Get().AbsPath(path).SetHeader("Accept", "application/json")
		if page > 0 {
			req = req.Param("limit", strconv.Itoa(page))
		}
		if cont != "" {
			req = req.Param("continue", cont)
		}
		raw, err := req.DoRaw(ctx)
		if err != nil {
			return 0, 0, fmt.Errorf("LIST %s (page %d): %w", path, pages+1, err)
		}
		var list struct {
			Metadata struct {
				Continue string `json:"continue"`
			} `json:"metadata"`
			Items []struct {
				APIVersion string `json:"apiVersion"`
			} `json:"items"`
		}
		if err := json.Unmarshal(raw, &list); err != nil {
			return 0, 0, fmt.Errorf("LIST %s (page %d): %w", path, pages+1, err)
		}
		if len(list.Items) > 0 && list.Items[0].APIVersion != "example.com/"+version {
			return 0, 0, fmt.Errorf("LIST %s returned %s", path, list.Items[0].APIVersion)
		}
		items += len(list.Items)
		pages++
		if cont = list.Metadata.Continue; cont == "" {
			break
		}
	}
	took := time.Since(start).Seconds()
	if items != n {
		return 0, 0, fmt.Errorf("LIST %s returned %d Drinks in %d pages, want %d", path, items, pages, n)
	}
	return took, pages, nil
}

// residentBytes is the process's resident memory now.
func residentBytes(pid int) (float64, error) {
	st, err := procStatus(pid)
	if err != nil {
		return 0, err
	}
	return float64(st.VmRSS), nil
}

// peakResidentBytes is the process's peak resident memory (VmHWM).
func peakResidentBytes(pid int) (float64, error) {
	st, err := procStatus(pid)
	if err != nil {
		return 0, err
	}
	return float64(st.VmHWM), nil
}

func procStatus(pid int) (procfs.ProcStatus, error) {
	p, err := procfs.NewProc(pid)
	if err != nil {
		return procfs.ProcStatus{}, err
	}
	return p.NewStatus()
}
