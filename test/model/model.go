package model

import (
	"maps"
	"slices"
	"strconv"
	"strings"
)

// The served versions of Drink, oldest first.
const (
	V1alpha1 = "v1alpha1"
	V1beta1  = "v1beta1"
	V1       = "v1"
)

// Versions lists the served versions of Drink, oldest first.
var Versions = []string{V1alpha1, V1beta1, V1}

// How a user writes a Drink.
const (
	// ByCreate creates with a plain create and updates with an update of a
	// fresh read (kubectl create, kubectl edit).
	ByCreate = "create"
	// ByApply creates and updates with server-side apply under one field
	// manager (kubectl apply --server-side).
	ByApply = "apply"
)

// Spec is a Drink's spec as a user of v1 (the hub) sees it. Extras is a set,
// kept sorted.
type Spec struct {
	DisplayName string
	Beverage    string
	Size        string
	SugarCubes  int32
	Extras      []string
}

// Drink is what the model knows of one Drink.
type Drink struct {
	Spec Spec
	// Authored is the version the spec was last changed through
	// (status.authoredVersion).
	Authored string
	// Method is how its user writes it (ByCreate or ByApply), chosen when it
	// was created. The model keeps one writer per Drink so that what an
	// apply leaves does not depend on managedFields, which are the API
	// server's business, not the operator's.
	Method string
	// AppliedExtras are the extras the applier of a ByApply Drink owns:
	// those of its last apply through v1. Server-side apply removes only
	// items of a set the applier owns, and an apply through v1alpha1 or
	// v1beta1 (which cannot hold extras) leaves it owning none, while
	// lossless conversion keeps the items. So after such an apply, a v1
	// apply adds to the extras it finds instead of replacing them.
	AppliedExtras []string
}

// Config is the OperatorConfig's part that Drinks depend on.
type Config struct {
	Managed     bool
	DefaultSize string
}

// Model is the user-visible state of one namespace and the OperatorConfig.
type Model struct {
	Config Config
	Drinks map[string]*Drink
	// ConfigMaps is what each ConfigMap named after a Drink must hold once
	// the operator has acted on the last step; absent means no ConfigMap.
	ConfigMaps map[string]map[string]string
}

// New returns the model of an empty namespace under the OperatorConfig's
// defaults (Managed, defaultSize Medium).
func New() *Model {
	return &Model{
		Config:     Config{Managed: true, DefaultSize: "Medium"},
		Drinks:     map[string]*Drink{},
		ConfigMaps: map[string]map[string]string{},
	}
}

// operatorKeys are every key of every layout: the operator owns these keys in
// a Drink's ConfigMap, whatever layout it currently renders.
var operatorKeys = []string{"name", "drink", "size", "sugar", "displayName", "beverage", "sugarCubes", "extras"}

// IsOperatorKey says whether the operator owns key in a Drink's ConfigMap.
func IsOperatorKey(key string) bool { return slices.Contains(operatorKeys, key) }

// View is the spec as a user of version sees it, every field rendered as a
// string (sugar as a decimal, extras comma-separated and sorted).
func View(s Spec, version string) map[string]string {
	switch version {
	case V1alpha1:
		return map[string]string{"name": s.DisplayName, "drink": s.Beverage}
	case V1beta1:
		return map[string]string{"name": s.DisplayName, "drink": s.Beverage, "size": s.Size, "sugar": strconv.Itoa(int(s.SugarCubes))}
	default:
		return map[string]string{"displayName": s.DisplayName, "beverage": s.Beverage, "size": s.Size,
			"sugarCubes": strconv.Itoa(int(s.SugarCubes)), "extras": strings.Join(sortedSet(s.Extras), ",")}
	}
}

// Layout is the operator's part of a Drink's ConfigMap (docs/DESIGN.md's table
// "authored in -> data keys"). It is by design the authored version's view
// of the spec, so that apps reading the ConfigMap see the version they wrote.
func Layout(d *Drink) map[string]string { return View(d.Spec, d.Authored) }

// Applicable says whether a can happen in the model's state: updates and
// deletes need the Drink, creates need its name free, operand edits need the
// ConfigMap. Replaying a shortened sequence skips what is not applicable.
func (m *Model) Applicable(a Action) bool {
	_, exists := m.Drinks[a.Name]
	_, hasCM := m.ConfigMaps[a.Name]
	switch a.Kind {
	case Create:
		return !exists
	case Update:
		return exists && m.Drinks[a.Name].Method == a.Method
	case Delete, Recreate:
		return exists
	case EditOperand:
		// A hand edit of one of the operator's keys the ConfigMap holds.
		_, hasKey := m.ConfigMaps[a.Name][a.Key]
		return hasKey && IsOperatorKey(a.Key)
	case AddForeignKey, DeleteOperand:
		return hasCM
	}
	return true
}

// MaxSmallExtras is the most extras a Small drink takes. docs/DESIGN.md does not
// say it: the project's validating webhook refuses more, and the model
// states it here as a rule of its own (a product rule to write into
// docs/DESIGN.md, or to drop from the webhook).
const MaxSmallExtras = 3

// Step applies a (which must be Applicable) to the model and says whether
// the API server accepts it; a refused write changes nothing (a Recreate's
// delete still happened). Then the operator acts: under Managed every
// ConfigMap becomes its Drink's layout plus the keys others added; under
// Unmanaged nothing but the garbage collector and the user touches
// ConfigMaps.
func (m *Model) Step(a Action) (accepted bool) {
	accepted = true
	switch a.Kind {
	case Create:
		accepted = m.create(a)
	case Update:
		accepted = m.update(a)
	case Delete:
		m.remove(a.Name)
	case Recreate:
		m.remove(a.Name)
		accepted = m.create(a)
	case EditOperand, AddForeignKey:
		m.ConfigMaps[a.Name][a.Key] = a.Value
	case DeleteOperand:
		delete(m.ConfigMaps, a.Name)
	case SetManagement:
		m.Config.Managed = a.Managed
	case SetDefaultSize:
		m.Config.DefaultSize = a.Size
	}
	if m.Config.Managed {
		m.converge()
	}
	return accepted
}

// MaxExtras is the most extras a Drink takes (docs/DESIGN.md: a set, at most 10).
const MaxExtras = 10

// valid says whether the API server accepts a Drink with spec s.
func valid(s Spec) bool {
	return len(s.Extras) <= MaxExtras && (s.Size != "Small" || len(s.Extras) <= MaxSmallExtras)
}

// create: the fields the version cannot hold start empty (sugar 0, no
// extras); an omitted size gets the OperatorConfig's defaultSize now.
func (m *Model) create(a Action) bool {
	s := Spec{DisplayName: a.Fields.DisplayName, Beverage: a.Fields.Beverage}
	if a.Version != V1alpha1 {
		s.Size, s.SugarCubes = a.Fields.Size, a.Fields.SugarCubes
	}
	if a.Version == V1 {
		s.Extras = sortedSet(a.Fields.Extras)
	}
	if s.Size == "" {
		s.Size = m.Config.DefaultSize
	}
	if !valid(s) {
		return false
	}
	m.Drinks[a.Name] = &Drink{Spec: s, Authored: a.Version, Method: a.Method}
	if a.Method == ByApply {
		m.Drinks[a.Name].AppliedExtras = s.Extras
	}
	return true
}

// update: conversion is lossless, so a version keeps what it cannot hold
// (v1alpha1 keeps size, sugar and extras; v1beta1 keeps extras); an omitted
// size keeps the old size (only a create gets the defaultSize); the
// authored version moves only when the spec changes.
func (m *Model) update(a Action) bool {
	d := m.Drinks[a.Name]
	s := d.Spec
	s.Extras = slices.Clone(s.Extras)
	s.DisplayName, s.Beverage = a.Fields.DisplayName, a.Fields.Beverage
	if a.Version != V1alpha1 {
		s.SugarCubes = a.Fields.SugarCubes
		if a.Fields.Size != "" {
			s.Size = a.Fields.Size
		}
	}
	applied := sortedSet(a.Fields.Extras)
	if a.Version == V1 {
		s.Extras = applied
		if a.Method == ByApply {
			// Items nobody owns stay (see AppliedExtras).
			for _, e := range d.Spec.Extras {
				if !slices.Contains(d.AppliedExtras, e) {
					s.Extras = append(s.Extras, e)
				}
			}
			s.Extras = sortedSet(s.Extras)
		}
	}
	if !valid(s) {
		return false
	}
	if a.Method == ByApply {
		d.AppliedExtras = nil
		if a.Version == V1 {
			d.AppliedExtras = applied
		}
	}
	if !equalSpec(s, d.Spec) {
		d.Spec, d.Authored = s, a.Version
	}
	return true
}

// remove deletes a Drink; the garbage collector deletes the ConfigMap it
// controls, Managed or not.
func (m *Model) remove(name string) {
	delete(m.Drinks, name)
	delete(m.ConfigMaps, name)
}

// converge is the operator under Managed: every Drink's ConfigMap exists
// with exactly its layout's keys (a key of another layout is the
// operator's, so it goes), and keys someone else added stay.
func (m *Model) converge() {
	for name, d := range m.Drinks {
		data := Layout(d)
		for k, v := range m.ConfigMaps[name] {
			if !IsOperatorKey(k) {
				data[k] = v
			}
		}
		m.ConfigMaps[name] = data
	}
}

// Clone returns a deep copy of m.
func (m *Model) Clone() *Model {
	c := &Model{Config: m.Config, Drinks: map[string]*Drink{}, ConfigMaps: map[string]map[string]string{}}
	for n, d := range m.Drinks {
		cp := *d
		cp.Spec.Extras = slices.Clone(d.Spec.Extras)
		cp.AppliedExtras = slices.Clone(d.AppliedExtras)
		c.Drinks[n] = &cp
	}
	for n, data := range m.ConfigMaps {
		c.ConfigMaps[n] = maps.Clone(data)
	}
	return c
}

func equalSpec(a, b Spec) bool {
	return a.DisplayName == b.DisplayName && a.Beverage == b.Beverage && a.Size == b.Size &&
		a.SugarCubes == b.SugarCubes && slices.Equal(sortedSet(a.Extras), sortedSet(b.Extras))
}

func sortedSet(s []string) []string {
	out := slices.Clone(s)
	slices.Sort(out)
	return slices.Compact(out)
}
