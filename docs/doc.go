// Package docs holds the project's documents (Markdown and figures). It
// has no code; its test keeps docs/design.md's package table true to
// the module.
package docs
