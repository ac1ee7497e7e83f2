// Package calc is the small project artagent's demo fixes: Add has a bug
// that calc_test.go catches.
package calc

// Add returns the sum of a and b.
func Add(a, b int) int {
	return a - b
}

// Mul returns the product of a and b.
func Mul(a, b int) int {
	return a * b
}
