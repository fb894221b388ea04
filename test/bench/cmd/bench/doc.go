// Command bench runs the operator's benchmarks (package bench) and prints
// their table: `make bench` for a quick run at N = 1000, `make bench-full`
// for three runs at N = 5000 and 1000. Run it inside the project's network
// namespace, like every API server the project starts.
package main
