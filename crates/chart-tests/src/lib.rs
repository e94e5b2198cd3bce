//! Nothing but tests (`tests/chart.rs`): they render `deploy/chart` with Helm 3 and 4 and read
//! every object into the Kubernetes API's own types, failing on any field those types do not
//! know, so that a misspelt field in a template fails the build.
