package servercmd

import (
	"fmt"
	"os"
	"strings"

	"github.com/spf13/pflag"
)

// EnvPrefix prefixes the environment variable of every flag:
// --hosting-root reads HOSTER_SERVER_HOSTING_ROOT.
const EnvPrefix = "HOSTER_SERVER_"

// EnvName is the environment variable that sets the flag named name.
func EnvName(name string) string {
	return EnvPrefix + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
}

// applyEnv sets every flag not given on the command line from its
// environment variable, if set. A bad value is a usage error naming the
// variable (never its value, which might be a secret in another program's
// environment).
func applyEnv(flags *pflag.FlagSet, getenv func(string) string) error {
	if getenv == nil {
		getenv = os.Getenv
	}
	var err error
	flags.VisitAll(func(f *pflag.Flag) {
		if err != nil || f.Changed || f.Name == "help" {
			return
		}
		v := getenv(EnvName(f.Name))
		if v == "" {
			return
		}
		if serr := flags.Set(f.Name, v); serr != nil {
			err = usageError{fmt.Errorf("reading %s: not a valid value for --%s (%s)", EnvName(f.Name), f.Name, f.Value.Type())}
		}
	})
	return err
}
