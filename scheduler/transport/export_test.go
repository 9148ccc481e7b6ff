package transport

// For the external tests of this package.
var (
	MakeTestPayload  = makePayload
	CheckTestPayload = checkPayload
)
