package api

// StatusByCode is the error map, for the API document check
// (openapi_validate_test.go) in package api_test.
var StatusByCode = statusByCode

// WriteError is the error writer, for the cause test (errors_test.go).
var WriteError = writeError
