package v1

// InCourseForm reports whether the spec sets the course's names of its
// fields (name or drink): it was written as the course's own example.com/v1
// Drink, whose ConfigMap holds the course's keys.
func (s *DrinkSpec) InCourseForm() bool {
	return s.Name != "" || s.Drink != ""
}

// DisplayNameOrName is displayName, or the course's name when displayName
// is empty: a Drink that the course's operator stored and no client has
// written since holds only the course's fields (every write since gets both
// from the mutating webhook).
func (s *DrinkSpec) DisplayNameOrName() string {
	if s.DisplayName != "" {
		return s.DisplayName
	}
	return s.Name
}

// BeverageOrDrink is beverage, or the course's drink when beverage is
// empty, as DisplayNameOrName.
func (s *DrinkSpec) BeverageOrDrink() string {
	if s.Beverage != "" {
		return s.Beverage
	}
	return s.Drink
}
