// Package abuse is the controller's abuse and fault suite (issue 12): it runs the real
// controller binary against hostile input, wrong credentials and broken dependencies, and prints
// every figure it measures. It has no code outside its tests.
package abuse
