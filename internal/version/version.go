// Package version holds the build's own version string, set at link time with
// -ldflags "-X github.com/hoster-dev/hoster/internal/version.Version=v1.2.3".
package version

// Version is the program version; "dev" for a build without ldflags.
var Version = "dev"
