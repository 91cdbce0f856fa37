package main

// The program runs as the README says it does.
func Example_main() {
	main()
	// Output:
	// attempt 1: allowed
	// attempt 2: allowed
	// attempt 3: allowed
	// attempt 4: denied
}
