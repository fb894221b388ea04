package v1alpha1

// DefaultSpec is the one place where the OperatorConfig's defaults are
// written in Go: the webhook, the bootstrap and the reconcilers derive theirs
// from it. The CRD's schema defaults come from the +kubebuilder:default
// markers on the spec fields, which cannot name Go constants; a test compares
// the generated CRD's defaults with DefaultSpec, so the two cannot drift.
func DefaultSpec() OperatorConfigSpec {
	return OperatorConfigSpec{
		ManagementState: DefaultManagementState,
		LogLevel:        DefaultLogLevel,
		Drinks:          DrinksConfig{DefaultSize: DefaultDrinkSize},
		Guestbook: GuestbookConfig{
			Namespace: DefaultGuestbookNamespace,
			Image:     DefaultGuestbookImage,
		},
	}
}
