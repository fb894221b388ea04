// Package model is a pure model of what the cluster must look like after any
// sequence of user actions on Drinks, their ConfigMaps and the
// OperatorConfig, written from the product's design (docs/DESIGN.md), and a
// generator that draws such sequences from a seed.
//
// It imports nothing from the project, not even apis/: an oracle built from
// the code under test (its layout function, its API types, its defaults)
// would check that code against itself and copy its mistakes. Only the
// standard library is used; test/modelcheck runs the actions against an API
// server and the operator and compares the cluster with this model.
package model
