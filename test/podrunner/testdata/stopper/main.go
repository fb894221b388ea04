// Command stopper is the container of the pod runner's eviction test: it
// prints when it starts and when SIGTERM arrives, then exits after
// -term-takes, or never on its own with -ignore-term (the grace period's
// SIGKILL ends it).
package main

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"
)

func main() {
	ignore := flag.Bool("ignore-term", false, "Keep running after SIGTERM.")
	takes := flag.Duration("term-takes", time.Second, "How long the shutdown takes after SIGTERM.")
	flag.Parse()
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM)
	fmt.Printf("stopper: started %s\n", time.Now().Format(time.RFC3339Nano))
	<-term
	fmt.Printf("stopper: SIGTERM %s\n", time.Now().Format(time.RFC3339Nano))
	if *ignore {
		select {}
	}
	time.Sleep(*takes)
	fmt.Printf("stopper: exiting %s\n", time.Now().Format(time.RFC3339Nano))
}
