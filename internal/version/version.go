// Package version holds the build's own version string, set at link time with
// -ldflags "-X github.com/hoster-dev/hoster/internal/version.Version=v1.2.3".
package version

import "regexp"

// Version is the program version; "dev" for a build without ldflags.
var Version = "dev"

// release matches a release version: v1.2.3, or v1.2.3-rc.1 and the like
// (not git describe's v1.2.3-4-gabcdef of a commit after one).
var release = regexp.MustCompile(`^v\d+\.\d+\.\d+(-(alpha|beta|rc)(\.?\d+)?)?$`)

// Release is Version when it names a release, else "dev". Generated files
// record it, so that a development build does not rewrite every generated
// file (and upload it again) at each commit.
func Release() string {
	if release.MatchString(Version) {
		return Version
	}
	return "dev"
}
